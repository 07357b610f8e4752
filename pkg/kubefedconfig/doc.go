// Package kubefedconfig turns the KubeFedConfig object into the settings the
// controllers run with. It fills the same defaults as the CRD schema and
// checks the same rules as its CEL validation, so a configuration written
// before those existed still gets a clear error instead of odd behaviour.
package kubefedconfig
