package rbacaudit

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Render writes the report: the rules with the requests that used them,
// the requests allowed outside the manifests, then the failures with what
// to do about each, and a last line saying whether the audit passed.
func Render(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	users := make([]string, 0, len(rep.Audited))
	for u := range rep.Audited {
		users = append(users, u)
	}
	sort.Strings(users)
	fmt.Fprintf(ew, "%d requests read;", rep.Requests)
	if len(users) == 0 {
		fmt.Fprint(ew, " none by the subjects the manifests bind")
	}
	for i, u := range users {
		sep := ","
		if i == len(users)-1 {
			sep = ""
		}
		fmt.Fprintf(ew, " %d by %s%s", rep.Audited[u], u, sep)
	}
	fmt.Fprintln(ew)
	fmt.Fprintln(ew)

	// One table per subject and role: a row per rule, with the requests
	// it allowed by verb and a few of them.
	var tw *tabwriter.Writer
	var current string
	for _, u := range rep.Rules {
		scope := "cluster-wide"
		if u.Namespace != "" {
			scope = "in namespace " + u.Namespace
		}
		if head := fmt.Sprintf("%s: %s, %s, through %s", shortSubject(u.Subject), u.Role, scope, u.Binding); head != current {
			if tw != nil {
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(ew)
			}
			current = head
			fmt.Fprintln(ew, head)
			tw = tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "  RULE\tVERBS (requests)\tREQUESTS\tEXAMPLES")
		}
		verbs := make([]string, len(u.Rule.Verbs))
		for i, v := range u.Rule.Verbs {
			verbs[i] = fmt.Sprintf("%s=%d", v, u.Verbs[v])
		}
		examples := append([]string{}, u.Examples...)
		if len(examples) == 0 {
			examples = []string{"-"}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", ruleTarget(u.Rule), strings.Join(verbs, " "), u.Requests, examples[0])
		for _, ex := range examples[1:] {
			fmt.Fprintf(tw, "  \t\t\t%s\n", ex)
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if len(rep.Elsewhere) > 0 {
		fmt.Fprintln(ew)
		fmt.Fprintln(ew, "Allowed by no rule of the manifests (the API server's default roles):")
		tw = tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBJECT\tREQUEST\tCOUNT\tALLOWED BY")
		for _, g := range rep.Elsewhere {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", shortSubject(g.User), g.What, g.Count, g.Example.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	for _, section := range []struct {
		title  string
		groups []RequestGroup
	}{
		{"Denied although the manifests grant it (the live RBAC differed: a spec revoked a grant, or the authorizer had not yet seen a binding):", rep.Revoked},
		{"Refused by admission for another reason than a permission (RBAC neither causes nor fixes these):", rep.Admission},
	} {
		if len(section.groups) == 0 {
			continue
		}
		fmt.Fprintln(ew)
		fmt.Fprintln(ew, section.title)
		tw = tabwriter.NewWriter(ew, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBJECT\tREQUEST\tCOUNT\tWHY")
		for _, g := range section.groups {
			why := g.Example.Message
			if len(why) > 160 {
				why = why[:157] + "..."
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", shortSubject(g.User), g.What, g.Count, why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(ew)
	if rep.OK() {
		fmt.Fprintln(ew, "rbac-audit: passed: every permission granted was used, no request was forbidden, no rule has a wildcard")
		return ew.err
	}
	fmt.Fprintf(ew, "rbac-audit: %d failures:\n", len(rep.Failures))
	for i, f := range rep.Failures {
		who := f.Role
		if f.Subject != "" {
			who = shortSubject(f.Subject)
			if f.Role != "" {
				who += ", " + f.Role
			}
		}
		fmt.Fprintf(ew, "%d. [%s] %s: %s\n   fix: %s\n", i+1, f.Kind, who, f.What, f.Fix)
	}
	return ew.err
}

// ruleTarget is what a rule grants verbs on: "apps deployments",
// "certificates.k8s.io signers [kubeharness.dev/webhook-serving]", or its
// URLs.
func ruleTarget(rule rbacv1.PolicyRule) string {
	if len(rule.NonResourceURLs) > 0 {
		return strings.Join(rule.NonResourceURLs, ",")
	}
	groups := make([]string, len(rule.APIGroups))
	for i, g := range rule.APIGroups {
		groups[i] = groupName(g)
	}
	s := strings.Join(groups, ",") + " " + strings.Join(rule.Resources, ",")
	if len(rule.ResourceNames) > 0 {
		s += " [" + strings.Join(rule.ResourceNames, ",") + "]"
	}
	return s
}

// shortSubject drops the "system:serviceaccount:" of a ServiceAccount's
// username: "kubeharness-system:kubeharness-manager".
func shortSubject(s string) string {
	return strings.TrimPrefix(s, "system:serviceaccount:")
}

// errWriter keeps the first write error, so that Render checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
