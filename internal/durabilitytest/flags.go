//go:build unix

package durabilitytest

import "flag"

// The flags of [CrashResume], registered in the test binary of each
// backend that imports this package.
var (
	crashTrials = flag.Int("crash.trials", 9, "SIGKILL trials of TestCrashResume with DurabilitySync (async and exit get a quarter as many each, at least 3)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestCrashResume's kill moments (0: random, logged)")
)

// CrashFlags returns the options of the -crash.trials and -crash.seed
// flags, for [CrashResume].
func CrashFlags() CrashOptions { return CrashOptions{Trials: *crashTrials, Seed: *crashSeed} }
