// The part of librdkafka's C API (rdkafka.h of librdkafka 2.15.1, the
// version confluent-kafka-go v2.15.1 bundles) that package rdkshare
// uses: the share consumer (KIP-932), which confluent-kafka-go does not
// wrap, and the few general calls it needs. The declarations are copied
// from rdkafka.h, which lives in the module cache, where no #cgo
// directive can point; the symbols come from the librdkafka that
// confluent-kafka-go links. Enumerations are ints, as in the C ABI.
// TestDeclarationsMatchHeader compiles this file against the real
// header: a prototype or struct layout that differs fails it.

#ifndef RDKSHARE_H
#define RDKSHARE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_error_s rd_kafka_error_t;
typedef struct rd_kafka_share_s rd_kafka_share_t;
typedef struct rd_kafka_messages_s rd_kafka_messages_t;

#ifndef _RDKAFKA_H_ // under the real header (the check), its own definitions
typedef int rd_kafka_resp_err_t;
typedef int rd_kafka_conf_res_t;
typedef int rd_kafka_share_AcknowledgeType_t;

typedef struct rd_kafka_message_s {
	rd_kafka_resp_err_t err;
	rd_kafka_topic_t *rkt;
	int32_t partition;
	void *payload;
	size_t len;
	void *key;
	size_t key_len;
	int64_t offset;
	void *_private;
} rd_kafka_message_t;

typedef struct rd_kafka_topic_partition_s {
	char *topic;
	int32_t partition;
	int64_t offset;
	void *metadata;
	size_t metadata_size;
	void *opaque;
	rd_kafka_resp_err_t err;
	void *_private;
} rd_kafka_topic_partition_t;

typedef struct rd_kafka_topic_partition_list_s {
	int cnt;
	int size;
	rd_kafka_topic_partition_t *elems;
} rd_kafka_topic_partition_list_t;
#endif

// Configuration, errors, topics.
rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                      const char *value, char *errstr,
                                      size_t errstr_size);
void rd_kafka_conf_set_opaque(rd_kafka_conf_t *conf, void *opaque);
void rd_kafka_conf_set_log_cb(rd_kafka_conf_t *conf,
                              void (*log_cb)(const rd_kafka_t *rk, int level,
                                             const char *fac,
                                             const char *buf));
void *rd_kafka_opaque(const rd_kafka_t *rk);
const char *rd_kafka_err2name(rd_kafka_resp_err_t err);
const char *rd_kafka_err2str(rd_kafka_resp_err_t err);
rd_kafka_resp_err_t rd_kafka_error_code(const rd_kafka_error_t *error);
const char *rd_kafka_error_string(const rd_kafka_error_t *error);
int rd_kafka_error_is_fatal(const rd_kafka_error_t *error);
void rd_kafka_error_destroy(rd_kafka_error_t *error);
const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt);
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int size);
void rd_kafka_topic_partition_list_destroy(
    rd_kafka_topic_partition_list_t *rkparlist);
rd_kafka_topic_partition_t *
rd_kafka_topic_partition_list_add(rd_kafka_topic_partition_list_t *rktparlist,
                                  const char *topic, int32_t partition);

// Message batches.
size_t rd_kafka_messages_count(const rd_kafka_messages_t *messages);
rd_kafka_message_t *rd_kafka_messages_get(const rd_kafka_messages_t *messages,
                                          size_t index);
void rd_kafka_messages_destroy(rd_kafka_messages_t *messages);
int16_t rd_kafka_message_delivery_count(const rd_kafka_message_t *rkmessage);

// The share consumer.
rd_kafka_share_t *rd_kafka_share_consumer_new(rd_kafka_conf_t *conf,
                                              char *errstr,
                                              size_t errstr_size);
rd_kafka_resp_err_t
rd_kafka_share_subscribe(rd_kafka_share_t *rkshare,
                         const rd_kafka_topic_partition_list_t *topics);
rd_kafka_error_t *rd_kafka_share_poll(rd_kafka_share_t *rkshare,
                                      int timeout_ms,
                                      rd_kafka_messages_t **rkmessages);
rd_kafka_resp_err_t
rd_kafka_share_acknowledge_type(rd_kafka_share_t *rkshare,
                                const rd_kafka_message_t *rkmessage,
                                rd_kafka_share_AcknowledgeType_t type);
rd_kafka_error_t *
rd_kafka_share_commit_sync(rd_kafka_share_t *rkshare, int timeout_ms,
                           rd_kafka_topic_partition_list_t **partitions);
rd_kafka_error_t *rd_kafka_share_consumer_close(rd_kafka_share_t *rkshare);
rd_kafka_error_t *rd_kafka_share_destroy(rd_kafka_share_t *rkshare);

// Package rdkshare's own: the log callback, which hands every line to the
// Go function registered (a cgo.Handle, the conf's opaque) for its
// consumer.
void rdkshare_conf_set_logger(rd_kafka_conf_t *conf, uintptr_t handle);

#endif
