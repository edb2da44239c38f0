package loadgen

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinators asks seeds for each group's coordinator (FindCoordinator,
// up to 100 groups a request), retrying while a coordinator is not
// available yet (a cluster whose shard has no owner yet, a broker still
// loading) until ctx ends. It returns each group's coordinator address,
// so that a run's connections go where its groups live, as a client's
// would, on one broker or many.
func Coordinators(ctx context.Context, seeds []string, groups []string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	defer cl.Close()
	out := make([]string, len(groups))
	for i := 0; i < len(groups); i += 100 {
		batch := groups[i:min(i+100, len(groups))]
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKeys = batch
			resp, err := req.RequestWith(rctx, cl)
			cancel()
			if err == nil {
				at := map[string]string{}
				for _, c := range resp.Coordinators {
					if c.ErrorCode != 0 {
						err = fmt.Errorf("FindCoordinator %s: %w", c.Key, kerr.ErrorForCode(c.ErrorCode))
						break
					}
					at[c.Key] = net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
				}
				for k, g := range batch {
					if out[i+k] = at[g]; out[i+k] == "" && err == nil {
						err = fmt.Errorf("FindCoordinator: no answer for group %s", g)
					}
				}
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return out, nil
}
