// Package framework brings up the real local clusters the end-to-end suites
// run on and gives specs typed clients for the host and each member. It
// installs the project's CRDs and finds the repository's binaries, so specs
// only describe behaviour.
package framework
