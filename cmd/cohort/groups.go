package main

// cohort groups: group administration over the Kafka protocol, in the
// manner of `rpk group`, kafka-consumer-groups.sh and, for KIP-932 share
// groups, kafka-share-groups.sh (groups_share.go). It uses only
// Kafka requests (through franz-go's kadm, and kmsg where kadm does not
// carry a field), so it works against Apache Kafka or any
// Kafka-compatible broker as well as Cohort.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const groupsUsage = `Usage: cohort groups <command> [flags]

Group administration over the Kafka protocol: classic, KIP-848 consumer and
KIP-932 share groups; works against Cohort and any Kafka-compatible broker.

Commands:
  list                         list groups (--state, --type filters)
  describe GROUP...            summary, members and per-partition offsets and lag
                               (--members, --state: the Kafka tools' views; a share
                               group's start offsets and lag as kafka-share-groups.sh)
  lag GROUP...                 per-partition lag
  delete GROUP...              delete groups (refused for a group with members)
  delete-offsets GROUP --topic T[:P,...]
                               delete a group's committed offsets (a share group's
                               start offsets, by whole topics)
  seek GROUP --to start|end|OFFSET|TIMESTAMP|-DURATION [--topics T[:P,...]] [--dry-run]
                               reset committed offsets, or a share group's start
                               offsets (the group must have no members)

Common flags (also from COHORT_BROKERS, COHORT_FORMAT, COHORT_TIMEOUT, COHORT_ADMIN_URL):
  --brokers host:port,...  seed brokers (default 127.0.0.1:9092)
  --format text|json       output format (default text)
  --timeout 10s            give up on the brokers after this long
  --admin-url URL          a Cohort node's admin listener: list, describe and lag
                           add the cgp_ id and RRL, the lag status and the time
                           to clear (--admin-token, or --admin-user and
                           --admin-password to authenticate; --org to choose)
  --tls, --tls-ca FILE, --tls-cert FILE, --tls-key FILE
                           reach a TLS listener (and present a client certificate)
  --sasl-mechanism M --sasl-user U --sasl-password P
                           authenticate on a SASL listener (PLAIN, SCRAM-SHA-256/512)

Run 'cohort groups <command> --help' for a command's flags.
`

// groupsCmd is one `cohort groups` (or `cohort users`) subcommand: its flags beyond the
// common ones, and what it does once they are parsed.
type groupsCmd struct {
	args  string // the arguments, for the usage line
	about string
	// minArgs is the fewest arguments it takes; maxArgs -1 for no limit.
	minArgs, maxArgs int
	flags            func(fs *flag.FlagSet) func(*groupsEnv, []string) error
}

var groupsCmds = map[string]groupsCmd{
	"list":           {"", "Lists the groups of every broker.", 0, 0, listFlags},
	"describe":       {"GROUP...", "Describes groups: a summary, the members and, per partition, the committed offset, the log start and end offsets, the lag and the member consuming it; a share group's members and, per partition, its start offset and lag (GROUP, TOPIC, PARTITION, START-OFFSET, LAG, as kafka-share-groups.sh).", 1, -1, describeFlags},
	"lag":            {"GROUP...", "Shows the lag of groups per partition: the log end offset less the committed offset; a share group's, the coordinator's (KIP-1226: the high watermark less the start offset less the records acknowledged or archived after it).", 1, -1, lagFlags},
	"delete":         {"GROUP...", "Deletes groups and their committed offsets; a group with members is refused (NON_EMPTY_GROUP).", 1, -1, deleteFlags},
	"delete-offsets": {"GROUP --topic T[:P,...]", "Deletes a group's committed offsets for topics or partitions (OffsetDelete); offsets of topics the group's members are subscribed to are refused (GROUP_SUBSCRIBED_TO_TOPIC). A share group's start offsets are deleted by whole topics (DeleteShareGroupOffsets, as kafka-share-groups.sh --delete-offsets), only while it is empty.", 1, 1, deleteOffsetsFlags},
	"seek":           {"GROUP --to start|end|OFFSET|TIMESTAMP|-DURATION", "Resets a group's committed offsets, as kafka-consumer-groups.sh --reset-offsets, or a share group's start offsets (AlterShareGroupOffsets, as kafka-share-groups.sh --reset-offsets): refused unless the group is Empty or Dead (no members).", 1, 1, seekFlags},
}

// groupsEnv is what every subcommand runs with: the parsed common flags
// and a client, made on first use.
type groupsEnv struct {
	name    string // "cohort groups list", for messages
	brokers []string
	json    bool
	timeout time.Duration
	stdout  io.Writer
	stderr  io.Writer // warnings: a partial answer
	stdin   io.Reader // `cohort users add --password-stdin`
	// adminURL is a Cohort node's admin listener, for what only Cohort
	// knows (groups_cohort.go); "" for none.
	adminURL string
	// adminToken, or adminUser and adminPassword, authenticate to the
	// admin listener; adminOrg names the organisation to read there
	// ("": the caller's own; an operator's, every one or the default).
	adminToken, adminUser, adminPassword, adminOrg string

	// sec is the --tls and --sasl-* flags' client options.
	sec []kgo.Opt

	cl  *kgo.Client
	adm *kadm.Client
	// dialErr is the last failed connection, dialFailed the broker it
	// was to, and reached the brokers connected to: to explain a
	// timeout by the broker that failed, which need not be a seed (the
	// group's coordinator, a partition's leader).
	dialMu     sync.Mutex
	dialErr    error
	dialFailed kgo.BrokerMetadata
	reached    []string
}

func groups(args []string, stdout, stderr io.Writer) int {
	return runAdminCommand("cohort groups", groupsUsage, groupsCmds, args, nil, stdout, stderr, func(fs *flag.FlagSet, env *groupsEnv) {
		fs.StringVar(&env.adminURL, "admin-url", "", "`URL` of a Cohort node's admin listener (e.g. http://127.0.0.1:9644): list, describe and lag then add the group's cgp_ id and RRL, describe and lag its lag status and time to clear (env COHORT_ADMIN_URL)")
		fs.StringVar(&env.adminToken, "admin-token", "", "the admin listener's bearer `token` (env COHORT_ADMIN_TOKEN)")
		fs.StringVar(&env.adminUser, "admin-user", "", "a SCRAM `user` to authenticate to the admin listener as (HTTP Basic): it sees its organisation's groups only")
		fs.StringVar(&env.adminPassword, "admin-password", "", "the --admin-user's `password` (env COHORT_ADMIN_PASSWORD)")
		fs.StringVar(&env.adminOrg, "org", "", "the `organisation` whose groups --admin-url reads (an operator's choice; default: the caller's own, or for an operator the default one)")
	})
}

// runAdminCommand runs one subcommand of a Kafka-protocol admin command
// (`cohort groups`, `cohort users`): its flags (the brokers, the output
// format, the timeout, the client's TLS and SASL, the command's own, and
// extra for the family's), its arguments' count, then the subcommand.
func runAdminCommand(family, usage string, cmds map[string]groupsCmd, args []string, stdin io.Reader, stdout, stderr io.Writer, extra func(*flag.FlagSet, *groupsEnv)) int {
	if code, ok := subcommand(family, usage, args, func(a string) bool { _, ok := cmds[a]; return ok }, stdout, stderr); !ok {
		return code
	}
	cmd := cmds[args[0]]
	env := &groupsEnv{name: family + " " + args[0], stdout: stdout, stderr: stderr, stdin: stdin}
	fs := flag.NewFlagSet(env.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var brokers, format string
	brokerFlags(fs, &brokers, &format)
	fs.DurationVar(&env.timeout, "timeout", 10*time.Second, "give up on the brokers after this long")
	var sec clientSecurity
	sec.flags(fs)
	if extra != nil {
		extra(fs, env)
	}
	do := cmd.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s [flags]\n\n%s\nEvery flag can also be set by an environment variable, COHORT_<FLAG_IN_CAPS>\n(e.g. COHORT_BROKERS); a flag on the command line wins.\n\nFlags:\n", env.name, cmd.args, cmd.about)
		fs.PrintDefaults()
	}
	pos, code, ok := parseFlagsArgs(fs, args[1:])
	if !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: "+format+"\n", append([]any{env.name}, a...)...)
		return 2
	}
	switch {
	case len(pos) < cmd.minArgs:
		return usageErr("missing argument: %s", cmd.args)
	case cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs:
		return usageErr("unexpected argument %q", pos[cmd.maxArgs])
	case format != "text" && format != "json":
		return usageErr("--format must be text or json, not %q", format)
	case env.timeout <= 0:
		return usageErr("--timeout must be positive")
	}
	env.json = format == "json"
	if env.brokers = splitBrokers(brokers); len(env.brokers) == 0 {
		return usageErr("--brokers is empty")
	}
	var err error
	if env.sec, err = sec.opts(); err != nil {
		return usageErr("%v", err)
	}
	defer env.close()
	if err := do(env, pos); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return usageErr("%s", ue)
		}
		fmt.Fprintf(stderr, "%s: %s\n", env.name, env.explain(err))
		return 1
	}
	return 0
}

// usageError is a bad command line found after parsing (exit 2).
type usageError string

func (e usageError) Error() string { return string(e) }

// client returns the env's admin client, creating it on first use.
func (e *groupsEnv) client() *kadm.Client {
	if e.adm != nil {
		return e.adm
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(e.brokers...),
		kgo.ClientID("cohort-cli"),
		kgo.DialTimeout(e.timeout),
		kgo.RetryTimeout(e.timeout),
		kgo.WithHooks(dialHook{e}),
	}, e.sec...)...)
	if err != nil {
		// Only a bad option fails here; the options above are fixed.
		panic(err)
	}
	e.cl, e.adm = cl, kadm.NewClient(cl)
	e.adm.SetTimeoutMillis(int32(min(e.timeout, time.Minute) / time.Millisecond))
	return e.adm
}

// kgo returns the env's franz-go client, for requests kadm does not wrap.
func (e *groupsEnv) kgo() *kgo.Client {
	e.client()
	return e.cl
}

func (e *groupsEnv) close() {
	if e.cl != nil {
		e.cl.Close()
	}
}

// warn writes a warning line: what the output lacks, and why.
func (e *groupsEnv) warn(format string, a ...any) {
	if e.stderr != nil {
		fmt.Fprintf(e.stderr, "%s: warning: "+format+"\n", append([]any{e.name}, a...)...)
	}
}

// ctx is the deadline of the whole command.
func (e *groupsEnv) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

type dialHook struct{ e *groupsEnv }

func (h dialHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	h.e.dialMu.Lock()
	defer h.e.dialMu.Unlock()
	if err != nil {
		h.e.dialErr, h.e.dialFailed = err, meta
	} else if !slices.Contains(h.e.reached, addr) {
		h.e.reached = append(h.e.reached, addr)
	}
}

// explain turns an error into the one line an operator reads: a timeout
// after failed connections names the broker that failed and why, and
// the brokers that answered if any did (a seed answers, and the node
// the command needs next, learned from it, does not).
func (e *groupsEnv) explain(err error) string {
	e.dialMu.Lock()
	dialErr, failed, reached := e.dialErr, e.dialFailed, slices.Clone(e.reached)
	e.dialMu.Unlock()
	if dialErr != nil && (errors.Is(err, context.DeadlineExceeded) || isDialError(err)) {
		if len(reached) == 0 {
			return fmt.Sprintf("cannot reach brokers %s within %v: %v", strings.Join(e.brokers, ","), e.timeout, dialErr)
		}
		who := net.JoinHostPort(failed.Host, strconv.Itoa(int(failed.Port)))
		if failed.NodeID >= 0 {
			who = fmt.Sprintf("node %d at %s", failed.NodeID, who)
		}
		return fmt.Sprintf("reached %s, but not %s within %v: %v", strings.Join(reached, ","), who, e.timeout, dialErr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer from brokers %s within %v", strings.Join(e.brokers, ","), e.timeout)
	}
	return err.Error()
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// output writes v as indented JSON, or calls text for tables.
func (e *groupsEnv) output(v any, text func(w io.Writer)) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(e.stdout)
	return nil
}

// table is a text/tabwriter table: columns two spaces apart, as rpk's.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(stringsAny(headers)...)
	return t
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\n")
}

func (t *table) flush() { t.tw.Flush() }

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// errString is err's message, "" for nil, for JSON.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// groupNotFound is the error for a group the brokers do not know, as
// kafka-consumer-groups.sh words it.
func groupNotFound(g string) error {
	return fmt.Errorf("group %q does not exist: %w", g, kerr.GroupIDNotFound)
}
