// Package compat holds the integration tests of drop-in compatibility with
// KubeFed v0.8.1's API: its validation, the zero values its Go types send,
// and its defaulting, on a real kube-apiserver with this project's CRDs
// and admission policies.
package compat
