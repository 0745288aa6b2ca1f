/* Every kernel, for one translation unit (the Cython module includes this header). */
#ifndef KL_ALL_H
#define KL_ALL_H
#include "kl_common.h"
#include "kl_crc.h"
#include "kl_v2.h"
#include "kl_legacy.h"
#include "kl_codecs.h"
#include "kl_avro.h"
#include "kl_redpanda.h"
#endif
