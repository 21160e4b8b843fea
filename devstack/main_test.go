package main

import (
	"testing"

	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestMain runs the tests of devstack's commands on a dev stack of their
// own, started on first use (clitest), driving the commands through
// runTools.
func TestMain(m *testing.M) { clitest.Main(m, runTools, toolExitCode) }

var (
	runCLI      = clitest.RunCLI
	stack       = clitest.Stack
	startWorker = clitest.StartWorker
	testStore   = clitest.Store
)
