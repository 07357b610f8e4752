package sync

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
	"github.com/kubefed-io/kubefed/pkg/overrides"
	"github.com/kubefed-io/kubefed/pkg/retention"
)

// HashAnnotation on a member object is the hash of the desired object last
// written to it, before the fields the member owns were retained. A template
// or override change changes the hash; a copy whose hash matches and whose
// fields still hold the desired values needs no write.
const HashAnnotation = "kubefed.io/propagation-hash"

// targetType is what the engine needs to know of an FTC's target type.
type targetType struct {
	apiVersion string
	kind       string
	gk         schema.GroupKind
	namespaced bool
}

// overridesError is an error of a cluster's overrides rather than of the
// template (ApplyOverridesFailed rather than ComputeResourceFailed).
type overridesError struct{ err error }

func (e *overridesError) Error() string { return e.err.Error() }
func (e *overridesError) Unwrap() error { return e.err }

// templateProblems are template metadata fields KubeFed does not propagate.
type templateProblems struct {
	annotations bool
	finalizers  bool
}

// desiredObject builds the object for one member from a federated object:
// its template, with the federated object's name and namespace, the target
// type's apiVersion and kind, the managed label and the cluster's
// overrides. Of the template's metadata only labels are kept, as in KubeFed
// (and empty annotations, which KubeFed kept too, for the overrides).
// It also returns the object's hash, stored in HashAnnotation.
func desiredObject(fed map[string]any, name, namespace string, t targetType, ops []overrides.Operation) (map[string]any, string, error) {
	obj, err := renderTemplate(fed, name, namespace, t)
	if err != nil {
		return nil, "", err
	}
	if err := finishObject(obj, name, namespace, t, ops); err != nil {
		return nil, "", err
	}
	hash, err := hashOf(obj)
	if err != nil {
		return nil, "", err
	}
	setHash(obj, hash)
	return obj, hash, nil
}

// retainedObject is the object an update writes over current. As in
// KubeFed, the template is rendered, the fields the member owns are
// retained from current, and only then are the cluster's overrides
// applied, so that an override of a retained field (spec.replicas with
// retainReplicas, an annotation, the finalizers) is written on updates as
// on creates. hash is the plan's: of the rendering with the overrides,
// before retention. A retention error is returned as is, an override's as
// an *overridesError.
func retainedObject(fed map[string]any, name, namespace string, t targetType, ops []overrides.Operation, current map[string]any, retainReplicas bool, hash string) (map[string]any, error) {
	obj, err := renderTemplate(fed, name, namespace, t)
	if err != nil {
		return nil, err
	}
	if err := retention.Retain(t.gk, obj, current, retainReplicas); err != nil {
		return nil, err
	}
	if err := finishObject(obj, name, namespace, t, ops); err != nil {
		return nil, err
	}
	setHash(obj, hash)
	return obj, nil
}

// renderTemplate is the template as an object of the target type, named
// as the federated object, with the template's labels (and its annotations
// when empty) and no other metadata.
func renderTemplate(fed map[string]any, name, namespace string, t targetType) (map[string]any, error) {
	obj := map[string]any{}
	if spec, ok := fed["spec"].(map[string]any); ok {
		if tmpl, ok := spec["template"].(map[string]any); ok {
			obj = jsonvalue.Copy(tmpl).(map[string]any)
		} else if spec["template"] != nil {
			return nil, fmt.Errorf("spec.template: expected an object, got %s", jsonvalue.TypeName(spec["template"]))
		}
	}
	delete(obj, "status")
	md := map[string]any{"name": name}
	if t.namespaced {
		md["namespace"] = namespace
	}
	if tmd, ok := obj["metadata"].(map[string]any); ok {
		// As in KubeFed, the labels are kept, and the annotations only
		// when there are none (checkTemplate reports the others): an empty
		// map stays, so that an override can add a key to it.
		if l, ok := tmd["labels"].(map[string]any); ok {
			md["labels"] = l
		}
		if a, ok := tmd["annotations"].(map[string]any); ok && len(a) == 0 {
			md["annotations"] = a
		}
	}
	obj["metadata"] = md
	obj["apiVersion"] = t.apiVersion
	obj["kind"] = t.kind
	return obj, nil
}

// finishObject applies the cluster's overrides to a rendered object, then
// what no override may change: the managed label, the name and namespace.
func finishObject(obj map[string]any, name, namespace string, t targetType, ops []overrides.Operation) error {
	md, _ := obj["metadata"].(map[string]any)
	startOverriddenParents(md, ops)
	if err := overrides.Apply(obj, ops); err != nil {
		return &overridesError{err}
	}
	// After the overrides, so that none can take the label off.
	if err := retention.SetManagedLabel(obj); err != nil {
		return err
	}
	// An override must not rename or move the object: the engine finds
	// member copies by the federated object's name.
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("metadata: an override replaced it with %s", jsonvalue.TypeName(obj["metadata"]))
	}
	md["name"] = name
	if t.namespaced {
		md["namespace"] = namespace
	}
	if a, ok := md["annotations"].(map[string]any); ok && len(a) == 0 {
		// An empty map the template kept for the overrides is not part of
		// the object: its hash is that of the same template without it.
		delete(md, "annotations")
	}
	if f, ok := md["finalizers"].([]any); ok && len(f) == 0 {
		delete(md, "finalizers")
	}
	if t.gk == (schema.GroupKind{Kind: "Secret"}) {
		if err := foldStringData(obj); err != nil {
			return err
		}
	}
	return nil
}

// startOverriddenParents gives md an empty annotations map (finalizers
// list) where an override sets a key (an element) of it and the rendering
// has none. KubeFed copied a member's annotations and finalizers into the
// rendering before its overrides on every update, so there such an
// override found its parent on every copy that had any (ours all carry
// HashAnnotation); only its creates failed. Here creates and updates both
// succeed.
func startOverriddenParents(md map[string]any, ops []overrides.Operation) {
	if md == nil {
		return
	}
	for _, op := range ops {
		if len(op.Path) < 3 || op.Path[0] != "metadata" {
			continue
		}
		switch op.Path[1] {
		case "annotations":
			if _, ok := md["annotations"]; !ok {
				md["annotations"] = map[string]any{}
			}
		case "finalizers":
			if _, ok := md["finalizers"]; !ok {
				md["finalizers"] = []any{}
			}
		}
	}
}

// setHash records hash in the object's HashAnnotation.
func setHash(obj map[string]any, hash string) {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	ann = maps.Clone(ann)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[HashAnnotation] = hash
	md["annotations"] = ann
}

// checkTemplate reports the template metadata KubeFed does not propagate.
func checkTemplate(fed map[string]any) templateProblems {
	spec, _ := fed["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	md, _ := tmpl["metadata"].(map[string]any)
	var p templateProblems
	if a, ok := md["annotations"].(map[string]any); ok && len(a) > 0 {
		p.annotations = true
	}
	if f, ok := md["finalizers"].([]any); ok && len(f) > 0 {
		p.finalizers = true
	}
	return p
}

// foldStringData moves a Secret's stringData into data, base64-encoded, as
// the apiserver does on write, so that the stored Secret compares equal to
// what is desired and a restart does not rewrite it.
func foldStringData(obj map[string]any) error {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		if obj["stringData"] != nil {
			return fmt.Errorf("stringData: expected an object, got %s", jsonvalue.TypeName(obj["stringData"]))
		}
		return nil
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("stringData.%s: expected a string, got %s", k, jsonvalue.TypeName(v))
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	obj["data"] = data
	delete(obj, "stringData")
	return nil
}

// hashOf is a short, stable digest of a JSON value: encoding/json sorts map
// keys, so equal objects hash equally.
func hashOf(obj map[string]any) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode the desired object: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// upToDate reports whether current, a member's copy, already is what
// desired asks for: it carries desired's hash, and every field desired sets
// has the desired value in current. Fields current has beyond desired are
// the apiserver's defaults and the member's own (status, retained fields);
// they never make a copy stale.
func upToDate(desired, current map[string]any, hash string) bool {
	cmd, _ := current["metadata"].(map[string]any)
	ann, _ := cmd["annotations"].(map[string]any)
	if ann[HashAnnotation] != hash {
		return false
	}
	dmd, _ := desired["metadata"].(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		if !contains(cmd[k], dmd[k]) {
			return false
		}
	}
	for k, v := range desired {
		switch k {
		case "metadata", "apiVersion", "kind", "status":
			continue
		}
		if !contains(current[k], v) {
			return false
		}
	}
	return true
}

// contains reports whether have holds every value want sets. Lists must have
// the same length and match element by element; numbers compare by value and
// strings that are equal quantities (0.5 and 500m) are equal, because the
// apiserver canonicalizes them.
func contains(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if v == nil {
				continue
			}
			// An absent key holds an empty list or map: the apiserver
			// drops those (tolerations: [], data: {}) from what it stores.
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case string:
		h, ok := have.(string)
		if !ok {
			// Absent: the apiserver omits an empty string it stores.
			return have == nil && w == ""
		}
		return h == w || equalQuantities(h, w)
	default:
		if have == nil {
			// Absent: the apiserver omits a false or 0 it stores
			// (hostNetwork: false, minReadySeconds: 0).
			wf, isNumber := number(want)
			return want == false || (isNumber && wf == 0)
		}
		if hf, ok := number(have); ok {
			if wf, ok := number(want); ok {
				return hf == wf
			}
		}
		return have == want
	}
}

func equalQuantities(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	if err != nil {
		return false
	}
	return qa.Cmp(qb) == 0
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// isHostNamespace reports whether the member copy of a FederatedNamespace
// is the namespace of the federated object itself in the host cluster: it
// is never deleted, only unlabelled, and always adopted.
func isHostNamespace(typeConfig string, clusterIsHost bool) bool {
	return typeConfig == corev1beta1.NamespacesTypeConfigName && clusterIsHost
}
