package rdkshare

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// layoutProbe prints the sizes, field offsets and field sizes of the structs and the
// enumeration rdkshare.h defines: built once on rdkafka.h, once on
// rdkshare.h alone, the two must print the same.
const layoutProbe = `
#include <stdio.h>
#include <stddef.h>
#ifdef REAL
#include "rdkafka.h"
#endif
#include "rdkshare.h"
#define F(t, f) printf(#t "." #f " %zu %zu\n", offsetof(t, f), sizeof(((t *)0)->f))
int main(void) {
	printf("rd_kafka_resp_err_t %zu\n", sizeof(rd_kafka_resp_err_t));
	printf("rd_kafka_share_AcknowledgeType_t %zu\n", sizeof(rd_kafka_share_AcknowledgeType_t));
	printf("rd_kafka_message_t %zu\n", sizeof(rd_kafka_message_t));
	F(rd_kafka_message_t, err); F(rd_kafka_message_t, rkt); F(rd_kafka_message_t, partition);
	F(rd_kafka_message_t, payload); F(rd_kafka_message_t, len); F(rd_kafka_message_t, key);
	F(rd_kafka_message_t, key_len); F(rd_kafka_message_t, offset);
	printf("rd_kafka_topic_partition_t %zu\n", sizeof(rd_kafka_topic_partition_t));
	F(rd_kafka_topic_partition_t, topic); F(rd_kafka_topic_partition_t, partition);
	F(rd_kafka_topic_partition_t, err);
	printf("rd_kafka_topic_partition_list_t %zu\n", sizeof(rd_kafka_topic_partition_list_t));
	F(rd_kafka_topic_partition_list_t, cnt); F(rd_kafka_topic_partition_list_t, elems);
	return 0;
}
`

// TestDeclarationsMatchHeader checks rdkshare.h against the rdkafka.h
// of the confluent-kafka-go the module requires (in the module cache):
// every prototype, compiled after the real one, must agree with it
// (gcc rejects conflicting types), and the structs the package reads
// must have the real layout.
func TestDeclarationsMatchHeader(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/confluentinc/confluent-kafka-go/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	inc := filepath.Join(strings.TrimSpace(string(out)), "kafka", "librdkafka_vendor")
	if _, err := os.Stat(filepath.Join(inc, "rdkafka.h")); err != nil {
		t.Fatal(err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte(layoutProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	run := func(name string, args ...string) string {
		t.Helper()
		exe := filepath.Join(dir, name)
		cmd := exec.Command(cc, append([]string{"-Wall", "-Werror", "-I", here, "-o", exe, src}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		out, err := exec.Command(exe).Output()
		if err != nil {
			t.Fatalf("%s: %v", exe, err)
		}
		return string(out)
	}
	real := run("real", "-DREAL", "-DLIBRDKAFKA_STATICLIB", "-I", inc)
	ours := run("ours")
	if real != ours {
		t.Errorf("layouts differ:\nrdkafka.h:\n%s\nrdkshare.h:\n%s", real, ours)
	}
}
