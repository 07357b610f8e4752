// Package federatedtype builds what makes an API type federatable: the
// Federated<T> CustomResourceDefinition and the FederatedTypeConfig, from a
// description of the target type. kubefedctl enable and the default types
// shipped in config/ both come from here, so they cannot drift apart.
package federatedtype
