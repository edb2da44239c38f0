package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SetConfig sets one config of a resource (a topic, a group, a broker:
// "" for the cluster-wide default) through IncrementalAlterConfigs, as a
// client of the node at addr; kadm has no call for group configs. It
// fails the test if the node refuses.
func SetConfig(t testing.TB, addr string, typ kmsg.ConfigResourceType, name, config, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = config, &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("set %s of %s: %v", config, name, err)
	}
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("set %s of %s: %v %v", config, name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}
