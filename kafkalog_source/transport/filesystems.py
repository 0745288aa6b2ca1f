"""Which store a path lives in: URIs → ``pyarrow.fs`` filesystems, configured by ``fs.*`` options.

A path with no scheme, or a ``file:`` URI, is a local file and never comes here (local files are
read with ``pread``, see :mod:`.source`). For the other schemes:

=====================  ==========================================  ==================================
scheme                 filesystem                                  path inside it
=====================  ==========================================  ==================================
``s3``, ``s3a``,       ``pyarrow.fs.S3FileSystem``                 ``bucket/key``
``s3n``
``gs``, ``gcs``        ``pyarrow.fs.GcsFileSystem``                ``bucket/key``
``abfs``, ``abfss``    ``pyarrow.fs.AzureFileSystem`` (the         ``container/path``
                       account from ``container@account.…``)
``hdfs``, ``viewfs``   ``pyarrow.fs.HadoopFileSystem`` (libhdfs)   ``/path``
anything else          fsspec's filesystem for the scheme, in      as fsspec strips the scheme
                       ``PyFileSystem(FSSpecHandler(...))``
=====================  ==========================================  ==================================

Credentials come from each filesystem's own chain (environment, profile, instance role); for S3
the endpoint and region come from the AWS chain too (:mod:`.aws`), which ``S3FileSystem`` does not
read by itself. Options named ``fs.<store>.<argument>`` (``<store>`` one of ``s3``, ``gs``,
``abfs``, ``hdfs`` or an fsspec protocol) are passed to that store's constructor and override the
chain: ``fs.s3.endpoint_override``, ``fs.s3.region``, ``fs.s3.anonymous``, ``fs.gs.anonymous``,
``fs.abfs.account_key``, ... An fsspec store's values stay strings unless its constructor's
signature (annotation or default) says it takes a bool, a number, a dict or a list. The options
reach executors in the pickled reader; a value appears in ``repr``, logs or error messages only
when its name is known to be harmless (:mod:`kafkalog_source.redact`), and a URI that carries a
credential is refused (:func:`~kafkalog_source.options.check_path`).

Filesystems are built once per process and per configuration.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import gc
import inspect
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import OptionError
from ..options import RETRY_ARG, STORE_OF_SCHEME, StoreOptions, check_path, doc_ref, scheme_of
from ..redact import redact_uri, scrub, show_value
from .aws import aws_settings


def local_path(path: str) -> str:
    """A local path: strips a ``file:`` scheme (``file:///x``, ``file:/x``, ``file://localhost/x``);
    refuses a remote URI (those go through :func:`resolve`)."""
    scheme = scheme_of(path)
    if scheme is None:  # no scheme, or a drive letter
        return path
    if scheme != "file":
        raise ValueError(f"{path}: not a local path")
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise OptionError(f"path {path!r}: file: URIs with a host are not supported")
    return unquote(parts.path) or "/"


def is_remote(path: str) -> bool:
    """Whether ``path`` names an object in a store other than the local filesystem."""
    scheme = scheme_of(path)
    return scheme is not None and scheme != "file"


@dataclass(frozen=True)
class Location:
    """A remote URI resolved: the filesystem, the path inside it, and how to turn a path of that
    filesystem back into a URI of the same form (so listings and errors show what the user typed).
    For S3, GCS and Azure, ``objects`` is the obstore client of the bucket (None when an option
    has no counterpart in it, see :mod:`.objects`) and ``key`` the object's key in it."""

    uri: str
    fs: Any  # pyarrow.fs.FileSystem
    path: str
    head: str  # uri = head + path_in_fs (with the leading part adjusted, see to_uri)
    strip: str  # the leading part of a filesystem path that the URI form leaves out
    objects: Any = None  # ObjectClient of the bucket or container, or None
    key: str = ""  # the key inside the bucket (with ``objects``)

    def to_uri(self, fs_path: str) -> str:
        """The URI of another path of the same filesystem."""
        p = fs_path
        if self.strip and p.startswith(self.strip):
            p = p[len(self.strip) :]
        return self.head + p.lstrip("/") if self.head.endswith("/") else self.head + p

    def child(self, fs_path: str) -> Location:
        """The location of another path of the same filesystem."""
        key = fs_path.partition("/")[2] if self.objects is not None else ""
        return Location(
            self.to_uri(fs_path), self.fs, fs_path, self.head, self.strip, self.objects, key
        )


_cache: dict[tuple, Any] = {}
_cache_lock = threading.Lock()


_release_registered = False


def _release_filesystems() -> None:
    """Drop the cached filesystems. Runs at exit before pyarrow finalizes its S3 client: an
    S3FileSystem destroyed after that aborts the process ("terminate called ...")."""
    with _cache_lock:
        _cache.clear()
    gc.collect()


def _filesystem(key: tuple, build: Any) -> Any:
    global _release_registered
    with _cache_lock:
        fs = _cache.get(key)
    if fs is None:
        fs = build()
        with _cache_lock:
            fs = _cache.setdefault(key, fs)
            if not _release_registered:
                # registered after pyarrow.fs (imported by ``build``) registered its own
                # finalizer, so it runs first (atexit runs handlers last in, first out)
                atexit.register(_release_filesystems)
                _release_registered = True
    return fs


def _constructor_error(store: str, exc: Exception, store_options: StoreOptions) -> OptionError:
    names = ", ".join(f"fs.{store}.{a}" for a in store_options.args_for(store)) or "none"
    return OptionError(
        f"cannot build the {store} filesystem from the options given ({names}): "
        f"{type(exc).__name__}: {scrub(str(exc), store_options.secrets())}",
        doc=doc_ref(f"fs.{store}."),
    )


# The AWS regions of buckets on AWS itself (looked up only where no endpoint is configured, so
# a bucket's name is the key), None where the look-up failed.
_regions: dict[str, str | None] = {}
_regions_lock = threading.Lock()


def _bucket_region(bucket: str) -> str | None:
    """The AWS region of ``bucket`` (one request, once per bucket and process, however many
    threads ask; none where a plan brought it: :func:`note_regions`); None when it cannot be
    told (the SDK's default region applies then)."""
    with _regions_lock:  # one look-up at a time: threads wait for the first one's answer
        if bucket not in _regions:
            from pyarrow import fs as pafs

            try:
                _regions[bucket] = pafs.resolve_s3_region(bucket)
            except (OSError, ValueError):
                _regions[bucket] = None
        return _regions[bucket]


def regions_of(path: str) -> tuple[tuple[str, str], ...]:
    """``((bucket, region),)`` for an ``s3://`` path whose bucket's region this process looked up
    (empty otherwise): what a plan carries to the readers (:func:`note_regions`). A region is
    not a secret."""
    scheme = scheme_of(path)
    if scheme is None or STORE_OF_SCHEME.get(scheme) != "s3":
        return ()
    bucket = urlsplit(path).netloc
    with _regions_lock:
        region = _regions.get(bucket)
    return ((bucket, region),) if region else ()


def note_regions(pairs: tuple[tuple[str, str], ...]) -> None:
    """Buckets' regions the plan found (:func:`regions_of`): a reader in another process (a
    Spark task) uses them instead of asking AWS again."""
    if pairs:
        with _regions_lock:
            for bucket, region in pairs:
                _regions.setdefault(bucket, region)


def _with_chain(kwargs: dict[str, Any], bucket: str) -> dict[str, Any]:
    """``fs.s3.*`` arguments with the endpoint and region the AWS chain gives where they say
    none, and on AWS itself (no endpoint) the bucket's own region (:func:`_bucket_region`)."""
    out = dict(kwargs)
    chain = aws_settings()  # AWS_ENDPOINT_URL_S3, AWS_REGION, the profile, ...
    if chain.endpoint and "endpoint_override" not in out:
        out["endpoint_override"] = chain.endpoint
    if "region" not in out:
        region = None
        if "endpoint_override" not in out and bucket:
            # AWS itself: the bucket's own region, as the AWS tools follow the redirect
            region = _bucket_region(bucket)
        region = region or chain.region
        if region is not None:
            out["region"] = region
    return out


_current_store: contextvars.ContextVar[StoreOptions | None] = contextvars.ContextVar(
    "kafkalog_store", default=None
)


@contextlib.contextmanager
def using_store(store: StoreOptions | None) -> Iterator[None]:
    """Within the block, opening or listing a remote path with no store options given uses
    ``store`` (the options of the read being planned, or of the command being run)."""
    token = _current_store.set(store)
    try:
        yield
    finally:
        _current_store.reset(token)


def current_store() -> StoreOptions | None:
    """The store options of the enclosing :func:`using_store` block, if any."""
    return _current_store.get()


def s3_arguments(uri: str, store_options: StoreOptions | None = None) -> dict[str, Any]:
    """The S3 settings an ``s3://`` (``s3a``, ``s3n``) ``uri`` is read with, as
    ``pyarrow.fs.S3FileSystem``'s arguments: the ``fs.s3.*`` options (by default those of the
    enclosing :func:`using_store`), the endpoint and region of the AWS chain where they say none
    (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, the profile's ``endpoint_url``, ``AWS_REGION``,
    ...: :mod:`.aws`), and on AWS itself the bucket's own region, looked up once per process.
    The one resolution :func:`resolve` uses, for whatever else reaches the same bucket (a lake
    table's library). No region when none is known (the SDKs then use ``us-east-1``)."""
    so = store_options or _current_store.get() or StoreOptions()
    return _with_chain(so.args_for("s3"), urlsplit(uri).netloc)


def resolve(uri: str, store_options: StoreOptions | None = None) -> Location:
    """The filesystem and path of a remote ``uri``, the filesystem built (or reused) from the
    options (by default those of the enclosing :func:`using_store`). Raises
    :class:`OptionError` for a scheme no filesystem serves or bad arguments."""
    so = store_options or _current_store.get() or StoreOptions()
    scheme = scheme_of(uri)
    if scheme is None or scheme == "file":
        raise ValueError(f"{uri}: not a remote URI")
    check_path(uri)
    parts = urlsplit(uri)
    store = STORE_OF_SCHEME.get(scheme, scheme)
    if store in ("s3", "gs", "abfs") and not parts.netloc:
        raise OptionError(
            f"path {redact_uri(uri)!r}: a {scheme} URI names its bucket or container after two "
            f"slashes, like {scheme}://bucket/prefix"
        )
    kwargs = so.args_for(store)
    frozen = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    try:
        if store == "s3":
            from pyarrow import fs as pafs

            kwargs = _with_chain(kwargs, parts.netloc)
            key = ("s3", frozen, kwargs.get("endpoint_override"), kwargs.get("region"))
            pa_kwargs = dict(kwargs)
            retry = pa_kwargs.pop(RETRY_ARG, None)
            if retry is not None:
                pa_kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=retry)
            fs = _filesystem(key, lambda: _s3(pafs, pa_kwargs))
            objects = _client(key, parts.netloc, "s3", kwargs, kwargs.get("region"))
            return Location(
                uri,
                fs,
                parts.netloc + parts.path,
                f"{scheme}://",
                "",
                objects,
                parts.path.lstrip("/"),
            )
        if store == "gs":
            from pyarrow import fs as pafs

            fs = _filesystem(("gs", frozen), lambda: pafs.GcsFileSystem(**kwargs))
            objects = _client(("gs", frozen), parts.netloc, "gs", kwargs)
            return Location(
                uri,
                fs,
                parts.netloc + parts.path,
                f"{scheme}://",
                "",
                objects,
                parts.path.lstrip("/"),
            )
        if store == "abfs":
            from pyarrow import fs as pafs

            container, at, host = parts.netloc.partition("@")
            if not at or not container:
                raise OptionError(
                    f"path {redact_uri(uri)!r}: an abfs URI names "
                    "container@account.dfs.core.windows.net"
                )
            kwargs.setdefault("account_name", host.split(".", 1)[0])
            sas = kwargs.get("sas_token")
            if isinstance(sas, str) and sas and not sas.startswith("?"):
                # pyarrow appends the token to the account's URL as given: "sv=...&sig=..." (as
                # the Azure portal shows it) would become a path segment, not a query string
                kwargs["sas_token"] = f"?{sas}"
            fs = _filesystem(("abfs", frozen, host), lambda: pafs.AzureFileSystem(**kwargs))
            objects = _client(
                ("abfs", frozen, host), container, "abfs", kwargs, account=kwargs["account_name"]
            )
            return Location(
                uri,
                fs,
                container + parts.path,
                f"{scheme}://{parts.netloc}",
                container,
                objects,
                parts.path.lstrip("/"),
            )
        if store == "hdfs":
            from pyarrow import fs as pafs

            kwargs.setdefault("host", parts.hostname or "default")
            if parts.port is not None:
                kwargs.setdefault("port", parts.port)
            fs = _filesystem(
                ("hdfs", frozen, parts.netloc), lambda: pafs.HadoopFileSystem(**kwargs)
            )
            return Location(uri, fs, parts.path or "/", f"{scheme}://{parts.netloc}", "")
        return _fsspec_location(uri, scheme, kwargs, frozen)
    except OptionError:
        raise
    except (TypeError, ValueError) as exc:
        raise _constructor_error(store, exc, so) from None


_clients: dict[tuple, Any] = {}


def _client(
    key: tuple, bucket: str, store: str, kwargs: dict, region: str | None = None, account: str = ""
) -> Any:
    """The obstore client of ``bucket`` (cached per configuration and bucket), or None when
    obstore cannot serve the options (see :mod:`.objects`)."""
    from .objects import object_client

    ck = (key, bucket, account)
    with _cache_lock:
        if ck in _clients:
            return _clients[ck]
    client = object_client(store, bucket, dict(kwargs), region, account)
    with _cache_lock:
        return _clients.setdefault(ck, client)


def _s3(pafs: Any, kwargs: dict) -> Any:
    return pafs.S3FileSystem(**kwargs)


def _fsspec_location(uri: str, scheme: str, kwargs: dict, frozen: tuple) -> Location:
    try:
        import fsspec
    except ImportError:
        raise OptionError(
            f"path {redact_uri(uri)!r}: the {scheme}:// scheme needs fsspec "
            "(pip install 'kafkalog[fsspec]'); s3, gs, abfs and hdfs need nothing more"
        ) from None
    try:
        cls = fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise OptionError(
            f"path {redact_uri(uri)!r}: no filesystem for the {scheme}:// scheme"
        ) from None
    except ImportError as exc:
        raise OptionError(
            f"path {redact_uri(uri)!r}: the {scheme}:// filesystem needs {exc}"
        ) from None
    kwargs = fsspec_arguments(cls, scheme, kwargs)
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    def build() -> Any:
        try:
            return PyFileSystem(FSSpecHandler(fsspec.filesystem(scheme, **kwargs)))
        except ImportError as exc:
            raise OptionError(
                f"path {redact_uri(uri)!r}: the {scheme}:// filesystem needs {exc.name}"
            ) from None

    fs = _filesystem(("fsspec", scheme, frozen), build)
    inner = fs.handler.fs
    path = inner._strip_protocol(uri)
    strip = "/" if path.startswith("/") and not uri[len(scheme) + 3 :].startswith("/") else ""
    return Location(uri, fs, path, f"{scheme}://", strip)


# What a signature's annotation names, and the type an option string becomes for it.
_DECLARED = {
    "bool": bool,
    "int": int,
    "float": float,
    "dict": dict,
    "Dict": dict,
    "Mapping": dict,
    "MutableMapping": dict,
    "list": list,
    "List": list,
    "Sequence": list,
    "tuple": list,
}
_WRAPPER = re.compile(r"(?:typing\.)?(?:Optional|Union)\[")
_INNERMOST = re.compile(r"\[[^\[\]]*\]")


def _declared_type(param: inspect.Parameter) -> type | None:
    """The one type the parameter's annotation declares among bool, int, float, dict and list
    (None when it admits a string, names another type or several; ``None`` itself aside), else
    the type of its default; None when neither says."""
    ann = param.annotation
    if ann is not inspect.Parameter.empty:
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or str(ann)
        text = _WRAPPER.sub("", text)
        while _INNERMOST.search(text):
            text = _INNERMOST.sub("", text)
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) - {"None", "NoneType", "typing"}
        types = {_DECLARED.get(w) for w in words}
        if types == {int, float}:
            return float
        return types.pop() if len(types) == 1 else None
    default = param.default
    for t in (bool, int, float, dict, list):  # bool first: a bool is an int
        if isinstance(default, t):
            return t
    return None


def _convert(text: str, want: type) -> Any:
    """``text`` as a ``want``; ValueError when it is not one."""
    s = text.strip()
    if want is bool:
        if s.lower() not in ("true", "false"):
            raise ValueError
        return s.lower() == "true"
    if want is int:
        return int(s) if re.fullmatch(r"[+-]?[0-9]+", s) else float(s)
    if want is float:
        return float(s)
    value = json.loads(s)
    if not isinstance(value, want):
        raise ValueError
    return value


def fsspec_arguments(cls: type, store: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``fs.<protocol>.*`` values as the fsspec filesystem ``cls`` takes them: a string stays a
    string unless the constructor's signature declares (annotation, else default) a bool, a
    number, a dict or a list (JSON) for that argument. OptionError for a value that is not one.
    ``password=007`` stays ``"007"``."""
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return dict(kwargs)
    out = {}
    for name, value in kwargs.items():
        param = params.get(name)
        want = _declared_type(param) if param is not None and isinstance(value, str) else None
        if want is None:
            out[name] = value
            continue
        try:
            out[name] = _convert(value, want)
        except (ValueError, json.JSONDecodeError):
            what = {bool: "true or false", int: "a number", float: "a number"}.get(
                want, f"a JSON {want.__name__}"
            )
            raise OptionError(
                f"option 'fs.{store}.{name}': the {store} filesystem ({cls.__name__}) takes "
                f"{what}, got {show_value(store, name, value)}",
                doc=doc_ref(f"fs.{store}.{name}"),
            ) from None
    return out


__all__ = [
    "Location",
    "current_store",
    "fsspec_arguments",
    "is_remote",
    "local_path",
    "note_regions",
    "regions_of",
    "resolve",
    "s3_arguments",
    "scheme_of",
    "using_store",
]
