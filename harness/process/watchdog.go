package process

import "os"

// EnvWatchdog, set to 1, has Linux end a started process's group through
// the watchdog when this process dies, as the other Unix systems do,
// instead of through the kernel's parent-death signal: so that the
// mechanism macOS relies on is tested on Linux too. Elsewhere it changes
// nothing.
const EnvWatchdog = "KUBEHARNESS_PROCESS_WATCHDOG"

// watchdogAsked reports whether EnvWatchdog asks for the watchdog.
func watchdogAsked() bool { return os.Getenv(EnvWatchdog) == "1" }
