package main

// cohort users: SCRAM credentials over the Kafka protocol
// (AlterUserScramCredentials and DescribeUserScramCredentials through
// kadm), as kafka-configs.sh --entity-type users --alter --add-config
// 'SCRAM-SHA-512=[password=...]' and rpk security user do. The password
// is salted on this side: the broker only ever gets the salted form.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

const usersUsage = `Usage: cohort users <command> [flags]

SCRAM users of the SASL listeners (Kafka's AlterUserScramCredentials and
DescribeUserScramCredentials: works against Cohort and Apache Kafka).
The first user can be created over a PLAINTEXT listener; PLAIN logins are
checked against the same credentials.

Commands:
  add NAME [--password P | --password-stdin] [--mechanism M] [--iterations N]
                 create a user, or change its password
  delete NAME [--mechanism M]
                 delete a user's credentials
  list           list users and their mechanisms

Common flags (also from COHORT_BROKERS, COHORT_FORMAT, COHORT_TIMEOUT):
  --brokers host:port,...  seed brokers (default 127.0.0.1:9092)
  --format text|json       output format (default text)
  --timeout 10s            give up on the brokers after this long
  --tls, --tls-ca, --tls-cert, --tls-key, --sasl-mechanism, --sasl-user,
  --sasl-password          reach a TLS or SASL listener

Run 'cohort users <command> --help' for a command's flags.
`

var usersCmds = map[string]groupsCmd{
	"add":    {"NAME", "Creates a SCRAM user, or changes its password, for SCRAM-SHA-256 and SCRAM-SHA-512 (or --mechanism).", 1, 1, usersAddFlags},
	"delete": {"NAME", "Deletes a user's SCRAM credentials (every mechanism, or --mechanism).", 1, 1, usersDeleteFlags},
	"list":   {"", "Lists the SCRAM users and their mechanisms and iterations.", 0, 0, usersListFlags},
}

func users(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAdminCommand("cohort users", usersUsage, usersCmds, args, stdin, stdout, stderr, nil)
}

// mechanismsFlag parses --mechanism: one of the SCRAM mechanisms, or
// both when empty.
func mechanismsFlag(m string) ([]kadm.ScramMechanism, error) {
	switch strings.ToUpper(m) {
	case "":
		return []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512}, nil
	case "SCRAM-SHA-256":
		return []kadm.ScramMechanism{kadm.ScramSha256}, nil
	case "SCRAM-SHA-512":
		return []kadm.ScramMechanism{kadm.ScramSha512}, nil
	}
	return nil, usageError(fmt.Sprintf("--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, not %q", m))
}

// altered turns a user's alteration results into one error.
func altered(res kadm.AlteredUserSCRAMs, user string) error {
	r, ok := res[user]
	if !ok {
		return fmt.Errorf("user %q: the broker did not answer for it", user)
	}
	if r.Err != nil {
		if r.ErrMessage != "" {
			return fmt.Errorf("user %q: %w: %s", user, r.Err, r.ErrMessage)
		}
		return fmt.Errorf("user %q: %w", user, r.Err)
	}
	return nil
}

func usersAddFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	password := fs.String("password", "", "the user's password (prefer --password-stdin or COHORT_PASSWORD: a flag shows in the process list)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	mech := fs.String("mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512 (default both)")
	iterations := fs.Int("iterations", 8192, "SCRAM iterations, 4096 to 16384 (Kafka's bounds)")
	return func(e *groupsEnv, args []string) error {
		mechs, err := mechanismsFlag(*mech)
		if err != nil {
			return err
		}
		pass := *password
		if *fromStdin {
			line, err := bufio.NewReader(e.stdin).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("reading the password: %w", err)
			}
			pass = strings.TrimRight(line, "\r\n")
		}
		if pass == "" {
			return usageError("a password is required: --password, --password-stdin or COHORT_PASSWORD")
		}
		if *iterations < 4096 || *iterations > 16384 {
			return usageError(fmt.Sprintf("--iterations must be between 4096 and 16384, not %d", *iterations))
		}
		var up []kadm.UpsertSCRAM
		for _, m := range mechs {
			up = append(up, kadm.UpsertSCRAM{User: args[0], Mechanism: m, Iterations: int32(*iterations), Password: pass})
		}
		ctx, cancel := e.ctx()
		defer cancel()
		res, err := e.client().AlterUserSCRAMs(ctx, nil, up)
		if err != nil {
			return err
		}
		if err := altered(res, args[0]); err != nil {
			return err
		}
		return e.output(map[string]any{"user": args[0], "mechanisms": mechNames(mechs)}, func(w io.Writer) {
			fmt.Fprintf(w, "user %s: %s set\n", args[0], strings.Join(mechNames(mechs), ", "))
		})
	}
}

func mechNames(ms []kadm.ScramMechanism) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}

func usersDeleteFlags(fs *flag.FlagSet) func(*groupsEnv, []string) error {
	mech := fs.String("mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512 (default every mechanism the user has)")
	return func(e *groupsEnv, args []string) error {
		ctx, cancel := e.ctx()
		defer cancel()
		var mechs []kadm.ScramMechanism
		if *mech != "" {
			var err error
			if mechs, err = mechanismsFlag(*mech); err != nil {
				return err
			}
		} else {
			d, err := e.client().DescribeUserSCRAMs(ctx, args[0])
			if err != nil {
				return err
			}
			u := d[args[0]]
			if u.Err != nil {
				return fmt.Errorf("user %q: %w", args[0], u.Err)
			}
			for _, ci := range u.CredInfos {
				mechs = append(mechs, ci.Mechanism)
			}
		}
		var del []kadm.DeleteSCRAM
		for _, m := range mechs {
			del = append(del, kadm.DeleteSCRAM{User: args[0], Mechanism: m})
		}
		res, err := e.client().AlterUserSCRAMs(ctx, del, nil)
		if err != nil {
			return err
		}
		if err := altered(res, args[0]); err != nil {
			return err
		}
		return e.output(map[string]any{"user": args[0], "deleted": mechNames(mechs)}, func(w io.Writer) {
			fmt.Fprintf(w, "user %s: %s deleted\n", args[0], strings.Join(mechNames(mechs), ", "))
		})
	}
}

// userJSON is one user in `cohort users list --format json`.
type userJSON struct {
	User       string          `json:"user"`
	Mechanisms []mechanismJSON `json:"mechanisms"`
}

type mechanismJSON struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func usersListFlags(*flag.FlagSet) func(*groupsEnv, []string) error {
	return func(e *groupsEnv, _ []string) error {
		ctx, cancel := e.ctx()
		defer cancel()
		d, err := e.client().DescribeUserSCRAMs(ctx)
		if err != nil {
			return err
		}
		out := []userJSON{}
		for _, u := range d.Sorted() {
			if u.Err != nil {
				return fmt.Errorf("user %q: %w", u.User, u.Err)
			}
			uj := userJSON{User: u.User}
			for _, ci := range u.CredInfos {
				uj.Mechanisms = append(uj.Mechanisms, mechanismJSON{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
			}
			out = append(out, uj)
		}
		return e.output(out, func(w io.Writer) {
			t := newTable(w, "USER", "MECHANISM", "ITERATIONS")
			for _, u := range out {
				for _, m := range u.Mechanisms {
					t.row(u.User, m.Mechanism, m.Iterations)
				}
			}
			t.flush()
		})
	}
}
