#include "rdkshare.h"
#include "_cgo_export.h"

static void rdkshare_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                            const char *buf) {
	rdkshareLog((uintptr_t)rd_kafka_opaque(rk), level, (char *)fac,
	            (char *)buf);
}

void rdkshare_conf_set_logger(rd_kafka_conf_t *conf, uintptr_t handle) {
	rd_kafka_conf_set_opaque(conf, (void *)handle);
	rd_kafka_conf_set_log_cb(conf, rdkshare_log_cb);
}
