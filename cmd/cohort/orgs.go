package main

// cohort orgs: the organisations (tenants) of a Cohort node, over its
// admin HTTP API (/api/v1/orgs). Only an operator may manage them: the
// admin token, or a super user's name and password.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/admin"
)

const orgsUsage = `Usage: cohort orgs <command> [flags]

Organisations of a Cohort node, over its admin HTTP API (operators only:
the admin token, or a super user's --user and --password). Each principal
belongs to one organisation and sees only its groups, offsets and metrics;
principals no organisation names are in "default".

Commands:
  list                            list the organisations and their members
  create NAME                     create an organisation
  delete NAME                     delete an organisation with no members left
  add-member ORG PRINCIPAL        put a principal (User:alice) in ORG, moving it
                                  from any other ("default": back to default)
  remove-member ORG PRINCIPAL     take a principal out of ORG (back to default)

Common flags (also from COHORT_ADMIN_URL, COHORT_ADMIN_TOKEN, COHORT_USER,
COHORT_PASSWORD, COHORT_FORMAT, COHORT_TIMEOUT):
  --admin-url URL       the node's admin listener (default http://127.0.0.1:9644)
  --admin-token T       the node's --admin-token
  --user U --password P a SCRAM user's name and password (HTTP Basic)
  --format text|json    output format (default text)
  --timeout 10s         give up after this long

Run 'cohort orgs <command> --help' for a command's flags.
`

type orgsCmd struct {
	args  string
	about string
	n     int // arguments taken
	run   func(ctx context.Context, a adminHTTP, args []string, out orgsOutput) error
}

var orgsCmds = map[string]orgsCmd{
	"list":          {"", "Lists the organisations, the default one first, and the principals in each.", 0, orgsList},
	"create":        {"NAME", "Creates an organisation: 1-63 of a-z, 0-9 and '-'.", 1, orgsCreate},
	"delete":        {"NAME", "Deletes an organisation with no members left; its groups and offsets stay, out of sight, and are its again if it is created anew.", 1, orgsDelete},
	"add-member":    {"ORG PRINCIPAL", "Puts a principal (Type:name, e.g. User:alice) in an organisation, moving it from any other.", 2, orgsAddMember},
	"remove-member": {"ORG PRINCIPAL", "Takes a principal out of an organisation: it is in the default one again.", 2, orgsRemoveMember},
}

// orgsOutput writes v as JSON or calls text.
type orgsOutput func(v any, text func(w io.Writer)) error

func orgs(args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand("cohort orgs", orgsUsage, args, func(a string) bool { _, ok := orgsCmds[a]; return ok }, stdout, stderr); !ok {
		return code
	}
	cmd := orgsCmds[args[0]]
	name := "cohort orgs " + args[0]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var adminURL, token, user, pass, format string
	var timeout time.Duration
	fs.StringVar(&adminURL, "admin-url", "http://127.0.0.1:9644", "`URL` of the node's admin listener (env COHORT_ADMIN_URL)")
	fs.StringVar(&token, "admin-token", "", "the node's admin bearer `token` (env COHORT_ADMIN_TOKEN)")
	fs.StringVar(&user, "user", "", "a SCRAM `user` to authenticate as (HTTP Basic; a super user to manage organisations)")
	fs.StringVar(&pass, "password", "", "the user's `password` (env COHORT_PASSWORD keeps it out of the process list)")
	fs.StringVar(&format, "format", "text", "output `format`: text (tables) or json")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s [flags]\n\n%s\nEvery flag can also be set by an environment variable, COHORT_<FLAG_IN_CAPS>\n(e.g. COHORT_ADMIN_URL); a flag on the command line wins.\n\nFlags:\n", name, cmd.args, cmd.about)
		fs.PrintDefaults()
	}
	pos, code, ok := parseFlagsArgs(fs, args[1:])
	if !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: "+format+"\n", append([]any{name}, a...)...)
		return 2
	}
	switch {
	case len(pos) < cmd.n:
		return usageErr("missing argument: %s", cmd.args)
	case len(pos) > cmd.n:
		return usageErr("unexpected argument %q", pos[cmd.n])
	case format != "text" && format != "json":
		return usageErr("--format must be text or json, not %q", format)
	case timeout <= 0:
		return usageErr("--timeout must be positive")
	case token != "" && user != "":
		return usageErr("give --admin-token or --user, not both")
	case user != "" && pass == "":
		return usageErr("--user needs --password")
	}
	out := func(v any, text func(w io.Writer)) error {
		e := &groupsEnv{stdout: stdout, json: format == "json"}
		return e.output(v, text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := cmd.run(ctx, newAdminHTTP(adminURL, token, user, pass), pos, out); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer from %s within %v", adminURL, timeout)
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, err)
		return 1
	}
	return 0
}

func orgsList(ctx context.Context, a adminHTTP, _ []string, out orgsOutput) error {
	var l struct {
		Orgs []admin.OrgInfo `json:"orgs"`
	}
	if err := a.do(ctx, "GET", "/api/v1/orgs", nil, &l); err != nil {
		return err
	}
	return out(l.Orgs, func(w io.Writer) {
		t := newTable(w, "ORG", "CREATED", "MEMBERS")
		for _, o := range l.Orgs {
			created := "-"
			if o.CreatedAt != nil {
				created = o.CreatedAt.UTC().Format(time.RFC3339)
			}
			members := strings.Join(o.Members, ",")
			if o.Name == "default" {
				members = "(everyone else)"
			}
			t.row(o.Name, created, dash(members))
		}
		t.flush()
	})
}

func orgsCreate(ctx context.Context, a adminHTTP, args []string, out orgsOutput) error {
	var o admin.OrgInfo
	if err := a.do(ctx, "POST", "/api/v1/orgs", map[string]string{"name": args[0]}, &o); err != nil {
		return err
	}
	return out(o, func(w io.Writer) { fmt.Fprintf(w, "organisation %s created\n", o.Name) })
}

func orgsDelete(ctx context.Context, a adminHTTP, args []string, out orgsOutput) error {
	if err := a.do(ctx, "DELETE", "/api/v1/orgs/"+url.PathEscape(args[0]), nil, nil); err != nil {
		return err
	}
	return out(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "organisation %s deleted\n", args[0]) })
}

func orgsAddMember(ctx context.Context, a adminHTTP, args []string, out orgsOutput) error {
	return orgsMember(ctx, a, "PUT", args, out)
}

func orgsRemoveMember(ctx context.Context, a adminHTTP, args []string, out orgsOutput) error {
	return orgsMember(ctx, a, "DELETE", args, out)
}

func orgsMember(ctx context.Context, a adminHTTP, method string, args []string, out orgsOutput) error {
	var m admin.OrgMembership
	if err := a.do(ctx, method, "/api/v1/orgs/"+url.PathEscape(args[0])+"/members/"+url.PathEscape(args[1]), nil, &m); err != nil {
		return err
	}
	return out(m, func(w io.Writer) { fmt.Fprintf(w, "%s is in organisation %s\n", m.Principal, m.Org) })
}
