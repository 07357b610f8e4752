package kubefedctl

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// objectRef names an object in output and errors, kubectl-style.
type objectRef struct {
	Kind      string
	Namespace string
	Name      string
}

func (o objectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// action is what a step did, as printed after the object.
type action string

const (
	actionCreated    action = "created"
	actionConfigured action = "configured"
	actionUnchanged  action = "unchanged"
	actionDeleted    action = "deleted"
)

// step is one change to one object. Commands plan all their steps, reading
// but not writing, before running any: a conflict then stops the command
// before it has done half its work, and --dry-run prints the plan.
type step struct {
	// where is the cluster the object lives in.
	where *cluster
	ref   objectRef
	// action is what the step will do; run may refine it (a Secret whose
	// content is only known at run time may turn out unchanged) and may
	// fill in ref.Name (a generated name).
	action action
	// run makes the change; nil when there is nothing to do.
	run func(ctx context.Context, s *step) error
}

// stepList collects the steps a command plans and the errors of planning:
// every conflict is reported, not only the first.
type stepList struct {
	steps []*step
	errs  []error
}

// add records a planned step (nil: nothing to do) or the error planning it.
func (l *stepList) add(s *step, err error) {
	if err != nil {
		l.errs = append(l.errs, err)
	} else if s != nil {
		l.steps = append(l.steps, s)
	}
}

// printer writes one kubectl-like line per object.
type printer struct {
	out    io.Writer
	dryRun bool
}

func (p printer) step(s *step) {
	p.linef("%s %s in %s", s.ref, s.action, s.where.context)
}

func (p printer) linef(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if p.dryRun {
		line += " (dry run)"
	}
	fmt.Fprintln(p.out, line)
}

// runSteps runs the steps in order, printing each, and stops at the first
// error. With dryRun it only prints.
func runSteps(ctx context.Context, steps []*step, p printer) error {
	for _, s := range steps {
		if !p.dryRun && s.run != nil {
			if err := s.run(ctx, s); err != nil {
				return err
			}
		}
		p.step(s)
	}
	return nil
}

// kubeObject is a typed API object such as *corev1.ServiceAccount.
type kubeObject interface {
	metav1.Object
	runtime.Object
}

// objectClient is the part of a client-go typed client the plans use; every
// generated client (ServiceAccounts(ns), ClusterRoles(), ...) satisfies it.
type objectClient[T kubeObject] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// syncResult says how a live object differs from the desired one.
type syncResult int

const (
	inSync syncResult = iota
	needsUpdate
	// needsRecreate means an immutable field differs, such as a binding's roleRef.
	needsRecreate
)

// applyPlan plans to make one object look like desired.
type applyPlan[T kubeObject] struct {
	where   *cluster
	client  objectClient[T]
	ref     objectRef
	desired T
	// sync copies the fields join owns from desired into live; nil when
	// only the labels matter.
	sync func(live, desired T) syncResult
	reg  registration
	// takeOver allows updating an existing object join did not create
	// (--error-on-existing=false).
	takeOver bool
	// absent skips the lookup: the object's namespace is being deleted, so
	// whatever is there now goes with it and must be created again.
	absent bool
}

func (a applyPlan[T]) plan(ctx context.Context) (*step, error) {
	s := &step{where: a.where, ref: a.ref}
	create := func(ctx context.Context, s *step) error {
		if _, err := a.client.Create(ctx, a.desired, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s in %s: %w", s.ref, s.where.context, err)
		}
		return nil
	}
	if a.absent {
		s.action, s.run = actionCreated, create
		return s, nil
	}
	live, err := a.client.Get(ctx, a.ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.action, s.run = actionCreated, create
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", a.ref, a.where.context, err)
	}
	if !a.takeOver && !a.reg.createdForRegistration(live.GetLabels()) {
		return nil, existingObjectError(a.ref, a.where, a.reg)
	}
	result := inSync
	if a.sync != nil {
		result = a.sync(live, a.desired)
	}
	if mergeLabels(live, a.desired.GetLabels()) && result == inSync {
		result = needsUpdate
	}
	switch result {
	case inSync:
		s.action = actionUnchanged
	case needsUpdate:
		s.action = actionConfigured
		s.run = func(ctx context.Context, s *step) error {
			if _, err := a.client.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update %s in %s: %w", s.ref, s.where.context, err)
			}
			return nil
		}
	case needsRecreate:
		s.action = actionConfigured
		uid := live.GetUID()
		s.run = func(ctx context.Context, s *step) error {
			err := a.client.Delete(ctx, a.ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("replace %s in %s: delete: %w", s.ref, s.where.context, err)
			}
			return create(ctx, s)
		}
	}
	return s, nil
}

// existingObjectError is join's answer to an object it did not create
// standing where it wants to create one, as KubeFed's --error-on-existing.
func existingObjectError(ref objectRef, where *cluster, reg registration) error {
	return fmt.Errorf("%s already exists in %s and was not created by kubefedctl join for cluster %q; delete it, or re-run with --error-on-existing=false to take it over",
		ref, where.context, reg.clusterName)
}

// mergeLabels adds want to obj's labels and reports whether that changed them.
func mergeLabels(obj metav1.Object, want map[string]string) bool {
	labels := obj.GetLabels()
	changed := false
	for k, v := range want {
		if labels[k] != v {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = v
			changed = true
		}
	}
	obj.SetLabels(labels)
	return changed
}

// planDelete plans to delete one object if it exists and, when keep is
// given, keep returns false for it. The delete is conditional on the UID
// seen while planning, so an object recreated meanwhile is left alone.
func planDelete[T kubeObject](ctx context.Context, where *cluster, c objectClient[T], ref objectRef, keep func(T) bool) (*step, error) {
	live, err := c.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", ref, where.context, err)
	case keep != nil && keep(live):
		return nil, nil
	}
	uid := live.GetUID()
	return &step{where: where, ref: ref, action: actionDeleted, run: func(ctx context.Context, s *step) error {
		err := c.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s in %s: %w", ref, where.context, err)
		}
		return nil
	}}, nil
}
