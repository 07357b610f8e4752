package retention

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

var (
	serviceKind        = schema.GroupKind{Kind: "Service"}
	serviceAccountKind = schema.GroupKind{Kind: "ServiceAccount"}
	jobKind            = schema.GroupKind{Group: "batch", Kind: "Job"}
)

// Retain copies into desired, the object about to be written to a member
// cluster, the fields of current, the member's object, that the member owns:
//   - metadata.resourceVersion, so that the update is accepted;
//   - metadata.finalizers, which member controllers set (desired's are
//     replaced, as in KubeFed);
//   - metadata.annotations: current's are kept and desired's (template and
//     overrides) are set on top, so desired wins for keys it sets;
//   - for a core Service: spec.clusterIP and spec.clusterIPs (immutable once
//     allocated; not for type ExternalName), spec.ports[].nodePort (type
//     NodePort or LoadBalancer) and spec.healthCheckNodePort (LoadBalancer
//     with externalTrafficPolicy Local), the last two only where desired
//     leaves them unset;
//   - for a core ServiceAccount: secrets, when desired sets none;
//   - spec.replicas when retainReplicas is true and current has it (an HPA in
//     the member scales it).
//
// desired is modified in place and must be owned by the caller; current is
// only read and nothing of it is aliased into desired. A field of the wrong
// type is an error that names it (FieldRetentionFailed for that cluster).
func Retain(gk schema.GroupKind, desired, current map[string]any, retainReplicas bool) error {
	if desired == nil {
		return fmt.Errorf("desired object is null")
	}
	if err := retainMetadata(desired, current); err != nil {
		return err
	}
	switch gk {
	case serviceKind:
		if err := retainServiceFields(desired, current); err != nil {
			return err
		}
	case serviceAccountKind:
		if err := retainServiceAccountSecrets(desired, current); err != nil {
			return err
		}
	case jobKind:
		if err := retainJobSelector(desired, current); err != nil {
			return err
		}
	}
	if retainReplicas {
		return retainSpecReplicas(desired, current)
	}
	return nil
}

func retainMetadata(desired, current map[string]any) error {
	curMeta, err := asObject(current["metadata"])
	if err != nil {
		return fieldError(member, "metadata", err)
	}
	desMeta, err := ensureObject(desired, "metadata")
	if err != nil {
		return err
	}

	rv, err := asString(curMeta["resourceVersion"])
	if err != nil {
		return fieldError(member, "metadata.resourceVersion", err)
	}
	if rv == "" {
		delete(desMeta, "resourceVersion")
	} else {
		desMeta["resourceVersion"] = rv
	}

	finalizers, err := copyStrings(curMeta["finalizers"])
	if err != nil {
		return fieldError(member, "metadata.finalizers", err)
	}
	if finalizers == nil {
		delete(desMeta, "finalizers")
	} else {
		desMeta["finalizers"] = finalizers
	}

	curAnn, err := asObject(curMeta["annotations"])
	if err != nil {
		return fieldError(member, "metadata.annotations", err)
	}
	if len(curAnn) == 0 {
		return nil
	}
	desAnn, err := asObject(desMeta["annotations"])
	if err != nil {
		return fieldError(desiredObj, "metadata.annotations", err)
	}
	if desAnn == nil {
		desAnn = make(map[string]any, len(curAnn))
		desMeta["annotations"] = desAnn
	}
	for k, v := range curAnn {
		if _, set := desAnn[k]; set {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return fieldError(member, "metadata.annotations["+k+"]", errType("a string", v))
		}
		desAnn[k] = s
	}
	return nil
}

func retainServiceFields(desired, current map[string]any) error {
	curSpec, err := asObject(current["spec"])
	if err != nil {
		return fieldError(member, "spec", err)
	}
	if curSpec == nil {
		return nil
	}
	desSpec, err := ensureObject(desired, "spec")
	if err != nil {
		return err
	}
	svcType, err := asString(desSpec["type"])
	if err != nil {
		return fieldError(desiredObj, "spec.type", err)
	}
	if svcType == "" {
		svcType = "ClusterIP"
	}

	// An ExternalName Service has no cluster IP; carrying the member's over
	// would make switching to ExternalName fail validation. Otherwise the
	// member's allocation wins: it cannot change anyway.
	if svcType != "ExternalName" {
		ip, err := asString(curSpec["clusterIP"])
		if err != nil {
			return fieldError(member, "spec.clusterIP", err)
		}
		if ip != "" {
			desSpec["clusterIP"] = ip
		}
		ips, err := copyStrings(curSpec["clusterIPs"])
		if err != nil {
			return fieldError(member, "spec.clusterIPs", err)
		}
		if len(ips) > 0 {
			desSpec["clusterIPs"] = ips
		}
	}

	// Node ports are kept only where the desired type allows them, or the
	// update would be rejected when the type changes to ClusterIP.
	if svcType == "LoadBalancer" {
		if err := retainHealthCheckNodePort(desSpec, curSpec); err != nil {
			return err
		}
	}
	if svcType == "NodePort" || svcType == "LoadBalancer" {
		return retainNodePorts(desSpec, curSpec)
	}
	return nil
}

// retainHealthCheckNodePort keeps the member's allocation unless desired
// chooses a port; the field exists only with externalTrafficPolicy Local.
func retainHealthCheckNodePort(desSpec, curSpec map[string]any) error {
	policy, err := asString(desSpec["externalTrafficPolicy"])
	if err != nil {
		return fieldError(desiredObj, "spec.externalTrafficPolicy", err)
	}
	if policy != "Local" {
		return nil
	}
	set, err := asInt(desSpec["healthCheckNodePort"])
	if err != nil {
		return fieldError(desiredObj, "spec.healthCheckNodePort", err)
	}
	if set != 0 {
		return nil
	}
	port, err := asInt(curSpec["healthCheckNodePort"])
	if err != nil {
		return fieldError(member, "spec.healthCheckNodePort", err)
	}
	if port != 0 {
		desSpec["healthCheckNodePort"] = port
	}
	return nil
}

// servicePort is what identifies a Service port for node port retention.
type servicePort struct {
	name, protocol string
	port           int64
	nodePort       int64
}

// retainNodePorts gives each desired port without a nodePort the member's
// node port of the matching port: the one with the same name, else the one
// with the same protocol and port. Each member port is used at most once,
// so that two desired ports never get the same node port. A nodePort set in
// desired wins: the API server can change it, and the user asked for it.
func retainNodePorts(desSpec, curSpec map[string]any) error {
	desPorts, err := asList(desSpec["ports"])
	if err != nil {
		return fieldError(desiredObj, "spec.ports", err)
	}
	curPorts, err := asList(curSpec["ports"])
	if err != nil {
		return fieldError(member, "spec.ports", err)
	}
	if len(desPorts) == 0 || len(curPorts) == 0 {
		return nil
	}

	cur := make([]servicePort, 0, len(curPorts))
	for j, item := range curPorts {
		p, _, err := readPort(item, member, j)
		if err != nil {
			return err
		}
		if p.nodePort != 0 {
			cur = append(cur, p)
		}
	}
	if len(cur) == 0 {
		return nil
	}

	type wanted struct {
		port servicePort
		obj  map[string]any
	}
	var need []wanted
	for i, item := range desPorts {
		p, obj, err := readPort(item, desiredObj, i)
		if err != nil {
			return err
		}
		if p.nodePort == 0 {
			need = append(need, wanted{p, obj})
		}
	}

	used := make([]bool, len(cur))
	assign := func(w wanted, match func(servicePort) bool) bool {
		for j, c := range cur {
			if !used[j] && match(c) {
				used[j] = true
				w.obj["nodePort"] = c.nodePort
				return true
			}
		}
		return false
	}
	// All name matches go first, so that a port matched by protocol and port
	// cannot take the node port of a port that keeps its name.
	unmatched := need[:0]
	for _, w := range need {
		if w.port.name == "" || !assign(w, func(c servicePort) bool { return c.name == w.port.name }) {
			unmatched = append(unmatched, w)
		}
	}
	for _, w := range unmatched {
		assign(w, func(c servicePort) bool { return c.protocol == w.port.protocol && c.port == w.port.port })
	}
	return nil
}

// readPort reads item, spec.ports[i] of who, as a servicePort.
func readPort(item any, who string, i int) (servicePort, map[string]any, error) {
	var p servicePort
	m, ok := item.(map[string]any)
	if !ok || m == nil {
		// A nil map (never decoded from JSON, but possible in Go) cannot
		// take a nodePort.
		return p, nil, fieldError(who, fmt.Sprintf("spec.ports[%d]", i), errType("an object", item))
	}
	var err error
	if p.name, err = asString(m["name"]); err != nil {
		return p, nil, fieldError(who, fmt.Sprintf("spec.ports[%d].name", i), err)
	}
	if p.protocol, err = asString(m["protocol"]); err != nil {
		return p, nil, fieldError(who, fmt.Sprintf("spec.ports[%d].protocol", i), err)
	}
	if p.protocol == "" {
		p.protocol = "TCP" // the API server's default
	}
	if p.port, err = asInt(m["port"]); err != nil {
		return p, nil, fieldError(who, fmt.Sprintf("spec.ports[%d].port", i), err)
	}
	if p.nodePort, err = asInt(m["nodePort"]); err != nil {
		return p, nil, fieldError(who, fmt.Sprintf("spec.ports[%d].nodePort", i), err)
	}
	return p, m, nil
}

// retainServiceAccountSecrets keeps the token Secrets the member's
// controllers listed, unless desired lists its own.
func retainServiceAccountSecrets(desired, current map[string]any) error {
	des, err := asList(desired["secrets"])
	if err != nil {
		return fieldError(desiredObj, "secrets", err)
	}
	if len(des) > 0 {
		return nil
	}
	cur, err := asList(current["secrets"])
	if err != nil {
		return fieldError(member, "secrets", err)
	}
	if len(cur) > 0 {
		desired["secrets"] = jsonvalue.Copy(cur)
	}
	return nil
}

// retainJobSelector keeps what the member's apiserver generated for a Job
// and made immutable: spec.selector, unless desired sets one, and the
// labels it added to spec.template.metadata.labels (the Job's UID and
// name). Without them every update of a Job would be rejected.
func retainJobSelector(desired, current map[string]any) error {
	curSpec, err := asObject(current["spec"])
	if err != nil || curSpec == nil {
		return err
	}
	desSpec, err := ensureObject(desired, "spec")
	if err != nil {
		return err
	}
	if desSpec["selector"] == nil && curSpec["selector"] != nil {
		desSpec["selector"] = jsonvalue.Copy(curSpec["selector"])
	}
	curTmpl, err := asObject(curSpec["template"])
	if err != nil {
		return fieldError(member, "spec.template", err)
	}
	curMeta, err := asObject(curTmpl["metadata"])
	if err != nil {
		return fieldError(member, "spec.template.metadata", err)
	}
	curLabels, err := asObject(curMeta["labels"])
	if err != nil || len(curLabels) == 0 {
		return err
	}
	desTmpl, err := ensureObject(desSpec, "template")
	if err != nil {
		return err
	}
	desMeta, err := ensureObject(desTmpl, "metadata")
	if err != nil {
		return err
	}
	desLabels, err := ensureObject(desMeta, "labels")
	if err != nil {
		return err
	}
	for k, v := range curLabels {
		if _, ok := desLabels[k]; !ok {
			desLabels[k] = v
		}
	}
	return nil
}

// retainSpecReplicas keeps the member's spec.replicas, which an HPA there
// owns; without it each update would fight the autoscaler.
func retainSpecReplicas(desired, current map[string]any) error {
	curSpec, err := asObject(current["spec"])
	if err != nil {
		return fieldError(member, "spec", err)
	}
	raw := curSpec["replicas"]
	if raw == nil {
		return nil
	}
	n, err := asInt(raw)
	if err != nil {
		return fieldError(member, "spec.replicas", err)
	}
	desSpec, err := ensureObject(desired, "spec")
	if err != nil {
		return err
	}
	desSpec["replicas"] = n
	return nil
}

// Names of the two objects in errors.
const (
	member     = "member object"
	desiredObj = "desired object"
)

func fieldError(who, field string, err error) error {
	return fmt.Errorf("%s %s: %w", who, field, err)
}

func errType(want string, got any) error {
	return fmt.Errorf("expected %s, got %s", want, jsonvalue.TypeName(got))
}

// ensureObject returns desired[key] as an object, creating it if absent.
func ensureObject(desired map[string]any, key string) (map[string]any, error) {
	obj, err := asObject(desired[key])
	if err != nil {
		return nil, fieldError(desiredObj, key, err)
	}
	if obj == nil {
		obj = map[string]any{}
		desired[key] = obj
	}
	return obj, nil
}

// asObject returns v as an object; nil if v is null.
func asObject(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errType("an object", v)
	}
	return m, nil
}

// asString returns v as a string; "" if v is null.
func asString(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", errType("a string", v)
	}
	return s, nil
}

// asList returns v as a list; nil if v is null.
func asList(v any) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, errType("a list", v)
	}
	return l, nil
}

// asInt returns v as an integer; 0 if v is null. It accepts the forms
// decoded JSON takes: int64 from the API machinery, integral float64 from
// encoding/json, and Go ints.
func asInt(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if n, ok := jsonvalue.Int64(v); ok {
		return n, nil
	}
	return 0, errType("an integer", v)
}

// copyStrings returns a copy of v, a list of strings, so that desired never
// shares the member's list; nil if v is null.
func copyStrings(v any) ([]any, error) {
	l, err := asList(v)
	if err != nil || l == nil {
		return nil, err
	}
	out := make([]any, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %d: %w", i, errType("a string", e))
		}
		out[i] = s
	}
	return out, nil
}
