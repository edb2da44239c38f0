package main

// cohort quotas: the organisations' quotas over the Kafka protocol
// (AlterClientQuotas and DescribeClientQuotas through kadm, entity type
// "org"), which kafka-configs.sh cannot address: it names only Kafka's own
// entity types (users, clients, ips).

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const quotasUsage = `Usage: cohort quotas <command> [flags]

Quotas of the organisations (Kafka's DescribeClientQuotas and
AlterClientQuotas with entity type "org"; an operator's business: with
--authorizer they need ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster).
ORG is an organisation's name, "default" for the default organisation, or
"*" for the default entity, whose values apply to every organisation
without its own.

Keys: producer_byte_rate, consumer_byte_rate (bytes/s), request_rate
(requests/s), request_percentage, max_groups, max_members_per_group.

Commands:
  set ORG KEY=VALUE...   set quotas (--validate-only to check them only)
  remove ORG KEY...      remove quotas
  list [ORG]             list the quotas of every organisation, or of one

Common flags (also from COHORT_BROKERS, COHORT_FORMAT, COHORT_TIMEOUT):
  --brokers host:port,...  seed brokers (default 127.0.0.1:9092)
  --format text|json       output format (default text)
  --timeout 10s            give up on the brokers after this long
  --tls, --tls-ca, --tls-cert, --tls-key, --sasl-mechanism, --sasl-user,
  --sasl-password          reach a TLS or SASL listener

Run 'cohort quotas <command> --help' for a command's flags.
`

var quotasCmds = map[string]groupsCmd{
	"set":    {"ORG KEY=VALUE...", "Sets quotas of an organisation (or of the default entity, *).", 2, -1, quotasSetFlags},
	"remove": {"ORG KEY...", "Removes quotas of an organisation (or of the default entity, *).", 2, -1, quotasRemoveFlags},
	"list":   {"[ORG]", "Lists the quotas of every organisation, or of one.", 0, 1, quotasListFlags},
}

func quotas(args []string, stdout, stderr io.Writer) int {
	return runAdminCommand("cohort quotas", quotasUsage, quotasCmds, args, nil, stdout, stderr, nil)
}

// orgEntityType is the quota entity type of an organisation.
const orgEntityType = "org"

// quotaEntity is ORG as a quota entity: "*" is the default entity.
func quotaEntity(org string) kadm.ClientQuotaEntity {
	c := kadm.ClientQuotaEntityComponent{Type: orgEntityType}
	if org != "*" {
		c.Name = kmsg.StringPtr(org)
	}
	return kadm.ClientQuotaEntity{c}
}

// entityName is ORG as the command line writes it.
func entityName(e kadm.ClientQuotaEntity) string {
	for _, c := range e {
		if c.Type == orgEntityType {
			if c.Name == nil {
				return "*"
			}
			return *c.Name
		}
	}
	return e.String()
}

func alterQuotas(e *groupsEnv, org string, ops []kadm.AlterClientQuotaOp, validateOnly bool) error {
	ctx, cancel := e.ctx()
	defer cancel()
	entries := []kadm.AlterClientQuotaEntry{{Entity: quotaEntity(org), Ops: ops}}
	var res kadm.AlteredClientQuotas
	var err error
	if validateOnly {
		res, err = e.client().ValidateAlterClientQuotas(ctx, entries)
	} else {
		res, err = e.client().AlterClientQuotas(ctx, entries)
	}
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("org %s: %w: %s", org, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("org %s: %w", org, r.Err)
		}
	}
	return nil
}

func quotasSetFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	validateOnly := fs.Bool("validate-only", false, "have the broker check the quotas without setting them")
	return func(e *groupsEnv, args []string) error {
		var ops []kadm.AlterClientQuotaOp
		set := map[string]float64{}
		for _, kv := range args[1:] {
			k, v, ok := strings.Cut(kv, "=")
			f, err := strconv.ParseFloat(v, 64)
			if !ok || k == "" || err != nil {
				return usageError(fmt.Sprintf("%q is not KEY=NUMBER", kv))
			}
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
			set[k] = f
		}
		if err := alterQuotas(e, args[0], ops, *validateOnly); err != nil {
			return err
		}
		return e.output(map[string]any{"org": args[0], "set": set, "validate_only": *validateOnly}, func(w io.Writer) {
			verb := "set"
			if *validateOnly {
				verb = "valid"
			}
			for _, op := range ops {
				fmt.Fprintf(w, "org %s: %s=%s %s\n", args[0], op.Key, strconv.FormatFloat(op.Value, 'f', -1, 64), verb)
			}
		})
	}
}

func quotasRemoveFlags(*flag.FlagSet) func(*groupsEnv, []string) error {
	return func(e *groupsEnv, args []string) error {
		var ops []kadm.AlterClientQuotaOp
		for _, k := range args[1:] {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
		}
		if err := alterQuotas(e, args[0], ops, false); err != nil {
			return err
		}
		return e.output(map[string]any{"org": args[0], "removed": args[1:]}, func(w io.Writer) {
			fmt.Fprintf(w, "org %s: %s removed\n", args[0], strings.Join(args[1:], ", "))
		})
	}
}

// quotaJSON is one organisation's quotas in `cohort quotas list --format json`.
type quotaJSON struct {
	Org    string             `json:"org"`
	Quotas map[string]float64 `json:"quotas"`
}

func quotasListFlags(*flag.FlagSet) func(*groupsEnv, []string) error {
	return func(e *groupsEnv, args []string) error {
		comp := kadm.DescribeClientQuotaComponent{Type: orgEntityType, MatchType: 2} // any
		switch {
		case len(args) == 1 && args[0] == "*":
			comp.MatchType = 1 // the default entity
		case len(args) == 1:
			comp.MatchType, comp.MatchName = 0, kmsg.StringPtr(args[0])
		}
		ctx, cancel := e.ctx()
		defer cancel()
		d, err := e.client().DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{comp})
		if err != nil {
			return err
		}
		out := []quotaJSON{}
		for _, q := range d {
			qj := quotaJSON{Org: entityName(q.Entity), Quotas: map[string]float64{}}
			for _, v := range q.Values {
				qj.Quotas[v.Key] = v.Value
			}
			out = append(out, qj)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Org < out[j].Org })
		return e.output(out, func(w io.Writer) {
			t := newTable(w, "ORG", "KEY", "VALUE")
			for _, q := range out {
				keys := make([]string, 0, len(q.Quotas))
				for k := range q.Quotas {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					t.row(q.Org, k, strconv.FormatFloat(q.Quotas[k], 'f', -1, 64))
				}
			}
			t.flush()
		})
	}
}
