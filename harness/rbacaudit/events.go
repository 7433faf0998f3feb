package rbacaudit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Event is the part of an audit.k8s.io/v1 Event the analysis reads.
type Event struct {
	AuditID          string            `json:"auditID"`
	Stage            string            `json:"stage"`
	Verb             string            `json:"verb"`
	RequestURI       string            `json:"requestURI"`
	User             UserInfo          `json:"user"`
	ImpersonatedUser *UserInfo         `json:"impersonatedUser,omitempty"`
	UserAgent        string            `json:"userAgent,omitempty"`
	ObjectRef        *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus   *Status           `json:"responseStatus,omitempty"`
	RequestObject    json.RawMessage   `json:"requestObject,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
}

// UserInfo is who made a request, or whom it impersonated.
type UserInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// ObjectRef is what a resource request was about.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Status is the response's status.
type Status struct {
	Code    int    `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// The annotations the API server's authorization filter adds to every
// event: its decision and, for RBAC, the binding and role that allowed it.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
)

// ReadEvents reads a JSON audit log, one event a line (kube-apiserver
// --audit-log-format=json).
func ReadEvents(r io.Reader) ([]Event, error) {
	var events []Event
	sc := bufio.NewScanner(r)
	// Events with request bodies can be long; a CSR is a few kilobytes.
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		events = append(events, e)
	}
	return events, sc.Err()
}

// Request is one request as the RBAC authorizer saw it, made by User (the
// impersonated user, when the requester impersonated one).
type Request struct {
	AuditID string
	User    string
	Groups  []string
	Verb    string
	// ResourceRequest is false for non-resource URLs (Path).
	ResourceRequest bool
	APIGroup        string
	// Resource is the resource, with "/subresource" when there is one.
	Resource  string
	Namespace string
	// Name is the object's name as the authorizer saw it: empty for
	// creates, which RBAC cannot limit by name.
	Name string
	// Path is the request URI without its query.
	Path string
	Code int
	// Decision and Reason are the authorization filter's annotations.
	Decision, Reason string
	Message          string
	// CheckedBy, on a request that has no audit event of its own, names the
	// admission plugin that authorized it while admitting Path.
	CheckedBy string
}

// Forbidden says whether the request was refused as forbidden, by RBAC or
// by an admission plugin.
func (r Request) Forbidden() bool { return r.Code == 403 }

// Authorized says whether RBAC (or another authorizer) let the request
// through; a 403 after an allow decision came from admission.
func (r Request) Authorized() bool {
	if r.Decision != "" {
		return r.Decision == "allow"
	}
	return r.Code != 403 && r.Code != 401
}

// String is the request as "verb path".
func (r Request) String() string {
	s := r.Verb + " " + r.Path
	if r.CheckedBy != "" {
		s = fmt.Sprintf("%s %s/%s (%s, admitting %s)", r.Verb, r.Resource, r.Name, r.CheckedBy, r.Path)
	}
	return s
}

// Requests turns events into requests: one per audit ID (a watch has an
// event when it starts and another when it ends; the last one counts),
// plus the authorizations admission plugins made (admissionChecks).
func Requests(events []Event) []Request {
	rank := map[string]int{"ResponseStarted": 1, "ResponseComplete": 2, "Panic": 3}
	var chosen []Event
	index := map[string]int{}
	for _, e := range events {
		if rank[e.Stage] == 0 {
			continue // RequestReceived: no decision, no code yet
		}
		if i, seen := index[e.AuditID]; seen && e.AuditID != "" {
			if rank[e.Stage] >= rank[chosen[i].Stage] {
				chosen[i] = e
			}
			continue
		}
		index[e.AuditID] = len(chosen)
		chosen = append(chosen, e)
	}
	var out, checks []Request
	for _, e := range chosen {
		r := requestOf(e)
		out = append(out, r)
		checks = append(checks, admissionChecks(r, e.RequestObject)...)
	}
	return append(out, checks...)
}

// requestOf is the request e records.
func requestOf(e Event) Request {
	r := Request{
		AuditID: e.AuditID, User: e.User.Username, Groups: e.User.Groups, Verb: e.Verb,
		Decision: e.Annotations[DecisionAnnotation], Reason: e.Annotations[ReasonAnnotation],
	}
	if e.ImpersonatedUser != nil {
		r.User, r.Groups = e.ImpersonatedUser.Username, e.ImpersonatedUser.Groups
	}
	r.Path = e.RequestURI
	if u, err := url.ParseRequestURI(e.RequestURI); err == nil {
		r.Path = u.Path
	}
	if s := e.ResponseStatus; s != nil {
		r.Code, r.Message = s.Code, s.Message
	}
	if o := e.ObjectRef; o != nil && o.Resource != "" {
		r.ResourceRequest = true
		r.APIGroup, r.Resource, r.Namespace, r.Name = o.APIGroup, o.Resource, o.Namespace, o.Name
		if o.Subresource != "" {
			r.Resource += "/" + o.Subresource
		} else if e.Verb == "create" {
			// The audit event names the object created; the authorizer
			// saw no name (the URL has none).
			r.Name = ""
		}
	}
	return r
}

// Admission plugins that authorize a request's requester a second time,
// for something the request implies, without a request of their own; a
// request they refuse is answered 403 with these words.
const (
	approvalPlugin = "CertificateApproval"
	signingPlugin  = "CertificateSigning"
	ownerRefPlugin = "OwnerReferencesPermissionEnforcement"
)

var refusals = map[string]string{
	approvalPlugin: "user not permitted to approve requests with signerName",
	signingPlugin:  "user not permitted to sign requests with signerName",
	ownerRefPlugin: "cannot set blockOwnerDeletion",
}

// admissionChecks are the authorizations admission plugins made while
// admitting r, as requests of their own (CheckedBy names the plugin):
//
//   - approve on the signer (CertificateApproval) for an update of a CSR's
//     approval;
//   - sign on the signer (CertificateSigning) for an update of a CSR's
//     status that changes its certificate or conditions; the event holds
//     only the new object, so a certificate or a Failed condition in it is
//     taken as the change (a signer writes either once);
//   - update on the owner's finalizers (OwnerReferencesPermissionEnforcement,
//     which the harness's API servers enable) for each owner reference
//     that blocks its owner's deletion in a created object. Updates are
//     not counted: whether they add such a reference the event cannot say.
//
// A check is counted as allowed when r succeeded, and as denied when r was
// refused with the plugin's words; otherwise it is not known to have run.
func admissionChecks(r Request, body json.RawMessage) []Request {
	if !r.ResourceRequest || len(body) == 0 {
		return nil
	}
	var plugin string
	switch {
	case r.APIGroup == "certificates.k8s.io" && r.Verb == "update" && r.Resource == "certificatesigningrequests/approval":
		plugin = approvalPlugin
	case r.APIGroup == "certificates.k8s.io" && r.Verb == "update" && r.Resource == "certificatesigningrequests/status":
		plugin = signingPlugin
	case r.Verb == "create":
		plugin = ownerRefPlugin
	default:
		return nil
	}
	decision := "allow"
	switch {
	case r.Code >= 200 && r.Code <= 299:
	case r.Code == 403 && strings.Contains(r.Message, refusals[plugin]):
		decision = "forbid"
	default:
		return nil
	}
	check := Request{
		AuditID: r.AuditID, User: r.User, Groups: r.Groups, ResourceRequest: true,
		Path: r.Path, Code: r.Code, Decision: decision, Message: r.Message, CheckedBy: plugin,
	}
	var obj admittedObject
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	if plugin == ownerRefPlugin {
		var out []Request
		for _, ref := range obj.Metadata.OwnerReferences {
			if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				continue
			}
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil {
				continue
			}
			// The API server maps the kind with its RESTMapper; the
			// conventional plural is what it finds for the kinds of
			// kubeharness and Kubernetes alike.
			plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(ref.Kind))
			c := check
			c.Verb, c.APIGroup, c.Resource, c.Namespace, c.Name = "update", gv.Group, plural.Resource+"/finalizers", r.Namespace, ref.Name
			out = append(out, c)
		}
		return out
	}
	if obj.Spec.SignerName == "" {
		return nil
	}
	check.APIGroup, check.Resource, check.Name = "certificates.k8s.io", "signers", obj.Spec.SignerName
	check.Verb = "approve"
	if plugin == signingPlugin {
		failed := slices.ContainsFunc(obj.Status.Conditions, func(c csrCondition) bool { return c.Type == "Failed" })
		if decision == "allow" && obj.Status.Certificate == "" && !failed {
			return nil
		}
		check.Verb = "sign"
	}
	return []Request{check}
}

// admittedObject is the part of a request body the admission checks read.
type admittedObject struct {
	Metadata struct {
		OwnerReferences []struct {
			APIVersion         string `json:"apiVersion"`
			Kind               string `json:"kind"`
			Name               string `json:"name"`
			BlockOwnerDeletion *bool  `json:"blockOwnerDeletion"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		SignerName string `json:"signerName"`
	} `json:"spec"`
	Status struct {
		Certificate string         `json:"certificate"`
		Conditions  []csrCondition `json:"conditions"`
	} `json:"status"`
}

type csrCondition struct {
	Type string `json:"type"`
}
