"""Reading control records and ``kafkalog verify`` do not import pandas (pyarrow's ``pa.array``,
``to_numpy`` and Python scalars import it when it is installed: 0.3 s of a process's start).
Each case runs a fresh interpreter; the time itself is measured in bench/ (docs/performance.md,
"Start-up"), not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, SAMPLES

TXN = SAMPLES / "transactions-0"


def _fresh(code: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_control_column_without_pandas() -> None:
    got = _fresh(
        "import json, sys\n"
        "import kafkalog_source as k\n"
        f"t = k.read_table({str(TXN)!r}, includeControlRecords='true')\n"
        "c = t.column('control').combine_chunks()\n"
        "print(json.dumps({'pandas': 'pandas' in sys.modules, 'rows': t.num_rows,\n"
        "  'control': [x for x in c.to_pylist() if x is not None]}))\n"
    )
    assert not got["pandas"]
    # the sample's markers: each a COMMIT or ABORT of version 0, with a coordinator epoch
    assert got["control"], "the sample holds transaction markers"
    assert {c["type"] for c in got["control"]} <= {"COMMIT", "ABORT"}
    assert all(c["version"] == 0 and c["coordinatorEpoch"] is not None for c in got["control"])


def test_verify_without_pandas() -> None:
    got = _fresh(
        "import json, sys\n"
        "from kafkalog_source.cli.main import main\n"
        f"rc = main(['verify', {str(TXN)!r}])\n"
        "print(json.dumps({'pandas': 'pandas' in sys.modules, 'rc': rc}))\n"
    )
    assert got == {"pandas": False, "rc": 0}
