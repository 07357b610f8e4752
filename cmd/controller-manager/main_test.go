package main

import (
	"strings"
	"testing"
)

// What is left after the flags is refused, naming it: a misspelled or
// misplaced subcommand must not start the control plane.
func TestArgumentsBesideTheFlagsAreRefused(t *testing.T) {
	if err := noArguments("controller-manager", nil); err != nil {
		t.Fatalf("flags only: %v", err)
	}
	err := noArguments("controller-manager", []string{"agnet"})
	if err == nil || !strings.Contains(err.Error(), `unexpected argument "agnet"`) {
		t.Fatalf("a misspelled subcommand: %v", err)
	}
	err = noArguments("controller-manager", []string{"agent"})
	if err == nil || !strings.Contains(err.Error(), "controller-manager agent [flags]") {
		t.Fatalf("the agent subcommand after a flag: %v", err)
	}
	if err := noArguments("controller-manager agent", []string{"extra"}); err == nil {
		t.Fatal("an argument to the agent was taken")
	}
}
