package sync

import (
	"bytes"
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

// cachedObject is a federated object as a type worker's host cache holds
// it: its metadata decoded, for the cache's keys and the event handlers,
// and the object itself as JSON, decoded again by each reader that needs
// more (decoded). Every replica holds every federated object of the host,
// whichever members it serves; as decoded JSON maps an object takes about
// ten times its JSON, which made the host objects most of what a
// scale-out replica holds beyond its own members' copies.
type cachedObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// body is the object's JSON without its status; status is its
	// status's (remote statuses in digest form), nil without one. Both
	// are never changed once cached: copies share them.
	body   []byte
	status []byte
}

// DeepCopyObject implements runtime.Object.
func (c *cachedObject) DeepCopyObject() runtime.Object {
	out := &cachedObject{TypeMeta: c.TypeMeta, body: c.body, status: c.status}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// compactHostObject is the host informer's transform: it drops the
// managed fields, puts remote statuses in digest form and keeps the object
// as a cachedObject. Anything it cannot encode (nothing the apiserver
// sends) stays as it came, which every reader takes too.
func compactHostObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	informermanager.StripManagedFields(u)
	compactRemoteStatus(u)
	c := &cachedObject{}
	c.APIVersion, c.Kind = u.GetAPIVersion(), u.GetKind()
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c.ObjectMeta); err != nil {
			return u, nil
		}
	}
	rest := u.Object
	if status, ok := u.Object["status"]; ok {
		raw, err := json.Marshal(status)
		if err != nil {
			return u, nil
		}
		c.status = raw
		rest = make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "status" {
				rest[k] = v
			}
		}
	}
	raw, err := json.Marshal(rest)
	if err != nil {
		return u, nil
	}
	c.body = raw
	return c, nil
}

// decoded is the federated object the host cache holds as obj (an object
// of its store, or the last state of one deleted): for a cachedObject a
// copy of the caller's own; an object cached as it came (see
// compactHostObject) is returned as it is and must not be changed.
func decoded(obj any) (*unstructured.Unstructured, bool) {
	switch o := lastState(obj).(type) {
	case *unstructured.Unstructured:
		return o, true
	case *cachedObject:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.body); err != nil {
			return nil, false
		}
		if o.status != nil {
			status, err := o.statusValue()
			if err != nil {
				return nil, false
			}
			u.Object["status"] = status
		}
		return u, true
	}
	return nil, false
}

// lastState is the object a deletion's tombstone holds, or obj.
func lastState(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// statusValue decodes the object's status alone.
func (c *cachedObject) statusValue() (any, error) {
	var status any
	err := utiljson.Unmarshal(c.status, &status)
	return status, err
}

// objectMeta is the metadata of a host cache's object (or of the last
// state of one deleted), without decoding the rest of it.
func objectMeta(obj any) (metav1.Object, bool) {
	switch o := lastState(obj).(type) {
	case *unstructured.Unstructured:
		return o, true
	case *cachedObject:
		return o, true
	}
	return nil, false
}

// sameCachedStatus reports whether two states of a cached object have the same
// status; objects cached as they came are compared decoded.
func sameCachedStatus(a, b any) bool {
	ca, ok1 := a.(*cachedObject)
	cb, ok2 := b.(*cachedObject)
	if ok1 && ok2 {
		return bytes.Equal(ca.status, cb.status)
	}
	ua, ok1 := decoded(a)
	ub, ok2 := decoded(b)
	if !ok1 || !ok2 {
		return false
	}
	return reflect.DeepEqual(ua.Object["status"], ub.Object["status"])
}
