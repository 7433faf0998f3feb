package rbacaudit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	manager = "system:serviceaccount:sys:manager"
	admin   = "admin"
)

// config is a small version of config/rbac: a ClusterRole and a Role in
// "sys", both granted to the manager.
func config(t *testing.T, clusterRules, nsRules []rbacv1.PolicyRule) *Config {
	t.Helper()
	sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "manager", Namespace: "sys"}}
	c := &Config{}
	err := c.Add("test",
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "manager-role"}, Rules: clusterRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "manager-rolebinding"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "manager-role"}, Subjects: sa},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "sys"}, Rules: nsRules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "sys"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "leader"}, Subjects: sa},
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ev is an audit event of the admin acting as the manager.
type ev struct {
	id, verb, uri, group, resource, sub, ns, name string
	code                                          int
	decision, msg                                 string
	body                                          any
}

// log renders events as kube-apiserver writes them, one JSON object a line.
func log(t *testing.T, events ...ev) []Request {
	t.Helper()
	var buf bytes.Buffer
	for i, e := range events {
		if e.id == "" {
			e.id = "id-" + strings.Repeat("x", i+1)
		}
		if e.code == 0 {
			e.code = 200
		}
		if e.decision == "" {
			e.decision = "allow"
			if e.code == 403 {
				e.decision = "forbid"
			}
		}
		m := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": e.id,
			"stage": "ResponseComplete", "verb": e.verb, "requestURI": e.uri,
			"user":             map[string]any{"username": admin, "groups": []string{"system:masters"}},
			"impersonatedUser": map[string]any{"username": manager, "groups": []string{"system:serviceaccounts", "system:authenticated"}},
			"responseStatus":   map[string]any{"metadata": map[string]any{}, "code": e.code, "message": e.msg},
			"annotations":      map[string]string{DecisionAnnotation: e.decision, ReasonAnnotation: "test"},
		}
		if e.resource != "" {
			m["objectRef"] = map[string]any{"apiGroup": e.group, "resource": e.resource, "subresource": e.sub, "namespace": e.ns, "name": e.name, "apiVersion": "v1"}
		}
		if e.body != nil {
			m["requestObject"] = e.body
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	read, err := ReadEvents(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return Requests(read)
}

func rule(groups, resources, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
}

func list(s ...string) []string { return s }

// failures returns the report's failures of kind.
func failures(rep *Report, kind FailureKind) []Failure {
	var out []Failure
	for _, f := range rep.Failures {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func usage(t *testing.T, rep *Report, resource string) RuleUsage {
	t.Helper()
	for _, u := range rep.Rules {
		if strings.Join(u.Rule.Resources, ",") == resource {
			return u
		}
	}
	t.Fatalf("no rule for %s in %+v", resource, rep.Rules)
	return RuleUsage{}
}

func TestEveryRuleUsedPasses(t *testing.T) {
	c := config(t,
		[]rbacv1.PolicyRule{rule(list(""), list("configmaps"), list("get", "list", "watch"))},
		[]rbacv1.PolicyRule{rule(list("coordination.k8s.io"), list("leases"), list("get", "update"))})
	reqs := log(t,
		ev{verb: "get", uri: "/api/v1/namespaces/a/configmaps/x", resource: "configmaps", ns: "a", name: "x"},
		ev{verb: "list", uri: "/api/v1/configmaps?limit=500", resource: "configmaps"},
		// A watch has an event when it starts and another when it ends.
		ev{id: "w", verb: "watch", uri: "/api/v1/configmaps?watch=true", resource: "configmaps"},
		ev{id: "w", verb: "watch", uri: "/api/v1/configmaps?watch=true", resource: "configmaps"},
		ev{verb: "get", uri: "/apis/coordination.k8s.io/v1/namespaces/sys/leases/l", group: "coordination.k8s.io", resource: "leases", ns: "sys", name: "l"},
		ev{verb: "update", uri: "/apis/coordination.k8s.io/v1/namespaces/sys/leases/l", group: "coordination.k8s.io", resource: "leases", ns: "sys", name: "l"},
	)
	rep := Analyze(c, reqs)
	if !rep.OK() {
		t.Fatalf("failures: %+v", rep.Failures)
	}
	cm := usage(t, rep, "configmaps")
	if cm.Requests != 3 || cm.Verbs["watch"] != 1 {
		t.Errorf("configmaps rule: %d requests, %v; want 3 with one watch", cm.Requests, cm.Verbs)
	}
	if rep.Audited[manager] != 5 {
		t.Errorf("audited %v; want 5 requests by the manager", rep.Audited)
	}
	var out bytes.Buffer
	if err := Render(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RULE", "sys:manager: ClusterRole/manager-role, cluster-wide", "Role/sys/leader, in namespace sys", "get=1 list=1 watch=1", "get /api/v1/namespaces/a/configmaps/x", "rbac-audit: passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUnusedVerbFails(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{rule(list(""), list("configmaps"), list("get", "delete"))}, nil)
	rep := Analyze(c, log(t, ev{verb: "get", uri: "/api/v1/namespaces/a/configmaps/x", resource: "configmaps", ns: "a", name: "x"}))
	unused := failures(rep, Unused)
	if len(unused) != 1 || !strings.Contains(unused[0].What, "delete core configmaps") || strings.Contains(unused[0].What, "get core") {
		t.Fatalf("unused failures %+v; want one naming delete only", unused)
	}
	var out bytes.Buffer
	if err := Render(&out, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[unused]") || !strings.Contains(out.String(), "fix: ") {
		t.Errorf("report does not list the failure with a fix:\n%s", out.String())
	}
}

func TestForbiddenFails(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{
		rule(list(""), list("configmaps"), list("get", "create")),
		rule(list("certificates.k8s.io"), list("certificatesigningrequests/approval"), list("update")),
	}, nil)
	approval := func(signer string) ev {
		return ev{verb: "update", uri: "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval", group: "certificates.k8s.io",
			resource: "certificatesigningrequests", sub: "approval", name: "c", code: 403, decision: "allow",
			msg:  `certificatesigningrequests.certificates.k8s.io "c" is forbidden: user not permitted to approve requests with signerName "` + signer + `"`,
			body: map[string]any{"spec": map[string]any{"signerName": signer}}}
	}
	rep := Analyze(c, log(t,
		ev{verb: "get", uri: "/api/v1/namespaces/a/configmaps/x", resource: "configmaps", ns: "a", name: "x"},
		ev{verb: "create", uri: "/api/v1/namespaces/a/configmaps", resource: "configmaps", ns: "a"},
		ev{verb: "list", uri: "/api/v1/secrets", resource: "secrets", code: 403},
		ev{verb: "list", uri: "/api/v1/secrets", resource: "secrets", code: 403},
		// Denied although the manifests grant it: a spec revoked it.
		ev{verb: "get", uri: "/api/v1/namespaces/a/configmaps/y", resource: "configmaps", ns: "a", name: "y", code: 403},
		// Allowed by RBAC, refused by an admission plugin for another
		// reason than a permission.
		ev{verb: "create", uri: "/api/v1/namespaces/gone/configmaps", resource: "configmaps", ns: "gone", code: 403, decision: "allow",
			msg: `configmaps "y" is forbidden: unable to create new content in namespace gone because it is being terminated`},
		// Refused by the approval plugin's check of a signer no rule grants.
		approval("example.com/signer"),
	))
	forbidden := failures(rep, Forbidden)
	if len(forbidden) != 2 {
		t.Fatalf("forbidden failures %+v; want the secrets list (twice, one failure) and the signer approval", forbidden)
	}
	if !strings.Contains(forbidden[0].What+forbidden[1].What, "list core secrets: forbidden 2 times") {
		t.Errorf("no failure counts the two RBAC refusals: %+v", forbidden)
	}
	if !strings.Contains(forbidden[0].What+forbidden[1].What, "approve certificates.k8s.io signers example.com/signer") {
		t.Errorf("the approval plugin's refusal is not told as the signer permission: %+v", forbidden)
	}
	if len(rep.Revoked) != 1 || !strings.Contains(rep.Revoked[0].What, "get core configmaps y") {
		t.Errorf("revoked %+v; want the get the manifests grant", rep.Revoked)
	}
	if len(rep.Admission) != 1 || !strings.Contains(rep.Admission[0].Example.Message, "being terminated") {
		t.Errorf("admission %+v; want the create in the namespace being deleted", rep.Admission)
	}
	var out bytes.Buffer
	if err := Render(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Denied although the manifests grant it", "Refused by admission for another reason", "[forbidden]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestOwnerReferenceChecks(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{
		rule(list(""), list("configmaps"), list("create")),
		rule(list("ops.kubeharness.dev"), list("playbooks/finalizers"), list("update")),
	}, nil)
	owned := func(block bool) map[string]any {
		return map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{
			"apiVersion": "ops.kubeharness.dev/v1", "kind": "Playbook", "name": "pb", "uid": "u", "controller": true, "blockOwnerDeletion": block,
		}}}}
	}
	create := func(body any) ev {
		return ev{verb: "create", uri: "/api/v1/namespaces/a/configmaps", resource: "configmaps", ns: "a", name: "pb-notes", body: body}
	}
	rep := Analyze(c, log(t, create(owned(false))))
	if u := usage(t, rep, "playbooks/finalizers"); u.Requests != 0 {
		t.Errorf("a reference that does not block deletion was checked: %+v", u)
	}
	rep = Analyze(c, log(t, create(owned(true))))
	u := usage(t, rep, "playbooks/finalizers")
	if u.Requests != 1 || !strings.Contains(u.Examples[0], "OwnerReferencesPermissionEnforcement") || !strings.Contains(u.Examples[0], "playbooks/finalizers/pb") {
		t.Errorf("the finalizers rule: %+v; want it used by the admission check of the create", u)
	}
	if !rep.OK() {
		t.Errorf("failures: %+v", rep.Failures)
	}
}

func TestWildcardFails(t *testing.T) {
	for _, r := range []rbacv1.PolicyRule{
		rule(list("*"), list("configmaps"), list("get")),
		rule(list(""), list("*"), list("get")),
		rule(list(""), list("*/status"), list("get")),
		rule(list(""), list("configmaps"), list("*")),
		{NonResourceURLs: list("/metrics*"), Verbs: list("get")},
	} {
		c := config(t, []rbacv1.PolicyRule{r}, nil)
		rep := Analyze(c, log(t,
			ev{verb: "get", uri: "/api/v1/namespaces/a/configmaps/x", resource: "configmaps", ns: "a", name: "x"},
			ev{verb: "get", uri: "/api/v1/namespaces/a/pods/x/status", resource: "pods", sub: "status", ns: "a", name: "x"},
			ev{verb: "get", uri: "/metrics/slis"},
		))
		if w := failures(rep, Wildcard); len(w) != 1 {
			t.Errorf("%s: wildcard failures %+v; want one", describeRule(r), w)
		}
		// A wildcard matches as RBAC matches it: the rule is used.
		if u := rep.Rules[0]; u.Requests == 0 {
			t.Errorf("%s matched no request", describeRule(r))
		}
	}
}

func TestResourceNames(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{
		rule(list("admissionregistration.k8s.io"), list("mutatingwebhookconfigurations"), list("patch"), "ours"),
		rule(list("certificates.k8s.io"), list("certificatesigningrequests"), list("delete"), "csr-a", "csr-b"),
		rule(list("certificates.k8s.io"), list("certificatesigningrequests"), list("create")),
	}, nil)
	rep := Analyze(c, log(t,
		ev{verb: "patch", uri: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/ours", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "ours"},
		ev{verb: "patch", uri: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/theirs", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "theirs"},
		ev{verb: "delete", uri: "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-a", group: "certificates.k8s.io", resource: "certificatesigningrequests", name: "csr-a"},
		// The audit event of a create names the object; RBAC saw no name,
		// so a rule with names cannot allow it.
		ev{verb: "create", uri: "/apis/certificates.k8s.io/v1/certificatesigningrequests", group: "certificates.k8s.io", resource: "certificatesigningrequests", name: "csr-a"},
	))
	if u := usage(t, rep, "mutatingwebhookconfigurations"); u.Requests != 1 {
		t.Errorf("the named patch rule allowed %d requests; want only the one of its name", u.Requests)
	}
	if len(rep.Elsewhere) != 1 || !strings.Contains(rep.Elsewhere[0].What, "theirs") {
		t.Errorf("allowed elsewhere: %+v; want the patch of another name", rep.Elsewhere)
	}
	unused := failures(rep, Unused)
	if len(unused) != 1 || !strings.Contains(unused[0].What, "delete certificates.k8s.io certificatesigningrequests csr-b") || strings.Contains(unused[0].What, "csr-a;") {
		t.Errorf("unused %+v; want the delete of csr-b alone", unused)
	}
	for _, u := range rep.Rules {
		if len(u.Rule.ResourceNames) > 0 && u.Verbs["create"] > 0 {
			t.Errorf("a create was credited to a rule with names: %+v", u)
		}
	}
}

func TestSubresources(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{
		rule(list("certificates.k8s.io"), list("certificatesigningrequests"), list("update")),
		rule(list("certificates.k8s.io"), list("certificatesigningrequests/approval"), list("update")),
		rule(list("certificates.k8s.io"), list("signers"), list("approve"), "example.com/signer"),
	}, nil)
	body := map[string]any{"spec": map[string]any{"signerName": "example.com/signer"}}
	rep := Analyze(c, log(t,
		ev{verb: "update", uri: "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval", group: "certificates.k8s.io",
			resource: "certificatesigningrequests", sub: "approval", name: "c", body: body},
	))
	if u := usage(t, rep, "certificatesigningrequests"); u.Requests != 0 {
		t.Errorf("the rule on the resource allowed an update of its subresource: %+v", u)
	}
	if u := usage(t, rep, "certificatesigningrequests/approval"); u.Requests != 1 {
		t.Errorf("the approval rule allowed %d requests; want 1", u.Requests)
	}
	// No request of its own: the approval update proves approve on the
	// signer its body names.
	if u := usage(t, rep, "signers"); u.Requests != 1 || !strings.Contains(u.Examples[0], "CertificateApproval") {
		t.Errorf("the signer rule: %+v; want it used by the approval's admission check", u)
	}
	if unused := failures(rep, Unused); len(unused) != 1 || !strings.Contains(unused[0].What, "update certificates.k8s.io certificatesigningrequests") {
		t.Errorf("unused %+v; want only the rule on the resource", unused)
	}
}

func TestSignerChecks(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{
		rule(list("certificates.k8s.io"), list("certificatesigningrequests/status"), list("update")),
		rule(list("certificates.k8s.io"), list("signers"), list("sign"), "example.com/signer"),
	}, nil)
	status := func(cert string) map[string]any {
		return map[string]any{"spec": map[string]any{"signerName": "example.com/signer"}, "status": map[string]any{"certificate": cert}}
	}
	csr := func(code int, body any) ev {
		return ev{verb: "update", uri: "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/status", group: "certificates.k8s.io",
			resource: "certificatesigningrequests", sub: "status", name: "c", code: code, body: body}
	}
	// Neither a status update without a certificate, nor a failed one,
	// proves sign.
	rep := Analyze(c, log(t, csr(200, status("")), csr(409, status("Y2VydA=="))))
	if u := usage(t, rep, "signers"); u.Requests != 0 {
		t.Errorf("sign credited without a written certificate: %+v", u)
	}
	rep = Analyze(c, log(t, csr(200, status("Y2VydA=="))))
	if u := usage(t, rep, "signers"); u.Requests != 1 || u.Verbs["sign"] != 1 {
		t.Errorf("the signer rule: %+v; want sign used once", u)
	}
	if !rep.OK() {
		t.Errorf("failures: %+v", rep.Failures)
	}
}

func TestNamespacedRoleAndClusterRole(t *testing.T) {
	c := config(t,
		[]rbacv1.PolicyRule{rule(list(""), list("events"), list("create"))},
		[]rbacv1.PolicyRule{rule(list("coordination.k8s.io"), list("leases"), list("get"))})
	rep := Analyze(c, log(t,
		ev{verb: "get", uri: "/apis/coordination.k8s.io/v1/namespaces/sys/leases/l", group: "coordination.k8s.io", resource: "leases", ns: "sys", name: "l"},
		ev{verb: "get", uri: "/apis/coordination.k8s.io/v1/namespaces/other/leases/l", group: "coordination.k8s.io", resource: "leases", ns: "other", name: "l"},
		ev{verb: "create", uri: "/api/v1/namespaces/other/events", resource: "events", ns: "other"},
	))
	if u := usage(t, rep, "leases"); u.Requests != 1 || u.Namespace != "sys" {
		t.Errorf("the Role's rule: %+v; want the Lease in sys only", u)
	}
	if u := usage(t, rep, "events"); u.Requests != 1 || u.Namespace != "" {
		t.Errorf("the ClusterRole's rule: %+v; want the Event in any namespace", u)
	}
	if len(rep.Elsewhere) != 1 || !strings.Contains(rep.Elsewhere[0].What, "in other") {
		t.Errorf("allowed elsewhere: %+v; want the Lease outside sys", rep.Elsewhere)
	}
}

func TestNonResourceURLs(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{{NonResourceURLs: list("/metrics"), Verbs: list("get")}}, nil)
	rep := Analyze(c, log(t, ev{verb: "get", uri: "/metrics?x=1"}, ev{verb: "get", uri: "/api"}))
	if u := rep.Rules[0]; u.Requests != 1 {
		t.Errorf("the /metrics rule: %+v", u)
	}
	if len(rep.Elsewhere) != 1 || rep.Elsewhere[0].What != "get /api" {
		t.Errorf("allowed elsewhere: %+v; want discovery", rep.Elsewhere)
	}
}

func TestOtherUsersAreNotAudited(t *testing.T) {
	c := config(t, []rbacv1.PolicyRule{rule(list(""), list("configmaps"), list("get"))}, nil)
	events, err := ReadEvents(strings.NewReader(`{"auditID":"1","stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/namespaces/a/configmaps/x",` +
		`"user":{"username":"admin"},"objectRef":{"resource":"configmaps","namespace":"a","name":"x"},"responseStatus":{"code":403}}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(c, Requests(events))
	if len(rep.Refused) != 0 || rep.Audited[admin] != 0 {
		t.Errorf("the admin's own request was audited: %+v", rep)
	}
}

func TestManifestProblems(t *testing.T) {
	c := &Config{}
	err := c.Add("test",
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lonely"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "m", Namespace: "sys"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(c, nil)
	if len(failures(rep, Unbound)) != 1 || len(failures(rep, MissingRole)) != 1 {
		t.Errorf("failures %+v; want the unbound role and the missing one", rep.Failures)
	}
}

func TestAddUnstructured(t *testing.T) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Rules:      []rbacv1.PolicyRule{rule(list(""), list("configmaps"), list("get"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "m"}}}
	c := &Config{}
	if err := c.Add("test", &unstructured.Unstructured{Object: obj}, sa); err != nil {
		t.Fatal(err)
	}
	if len(c.roles) != 1 || len(c.roles[0].rules) != 1 {
		t.Errorf("roles %+v; want the ClusterRole with its rule", c.roles)
	}
}

func TestReadEventsNamesTheBadLine(t *testing.T) {
	_, err := ReadEvents(strings.NewReader("{}\n\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("err = %v; want one naming line 3", err)
	}
}
