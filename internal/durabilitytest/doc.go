// Package durabilitytest holds the multi-process durability tests that the
// SQLite and PostgreSQL checkpointers share: several real processes (the
// test binary, re-executed) run graphs on one database, and some are
// killed with SIGKILL, while the parent test checks what the database
// holds and what the processes read back.
//
// Each backend's package wires them with thin tests:
//
//	func TestProcessChild(t *testing.T)     { durabilitytest.Child(t, backend) }
//	func TestProcessForkCollision(t *testing.T) { durabilitytest.ForkCollision(t, backend) }
//	...
//
// The child processes run the test named [ChildTest] of the same binary
// (exec.Command(os.Args[0], "-test.run=^TestProcessChild$", ...)), with
// environment variables selecting their role; run on its own, that test is
// skipped. So no separate binary is built.
//
// The tests:
//
//   - [ForkCollision]: two processes fork one checkpoint of a thread that
//     a third, younger process wrote; each fork must read back its own
//     value.
//   - [OldProcessFork]: a long-running process forks an old checkpoint of
//     a thread that a younger process ran since; the fork reads back its
//     value and the younger process's checkpoints keep theirs.
//   - [AlternatingWriters]: two processes run read-modify-write runs on one
//     thread, taking turns and then at once; no update is lost silently.
//   - [Lease]: a run blocked in a node holds its thread; another process is
//     refused with a [*checkpoint.LeaseHeldError] naming the holder until
//     the holder is killed and its lease expires, and then resumes the run
//     from its last checkpoint.
//   - [LeaseHolderKilled]: a process holds a thread's lease and keeps
//     renewing it; another is refused, naming it, until it is killed and
//     its lease expires. Its child runs the test named [LeaseChildTest].
//   - [CrashResume]: SIGKILL between nodes, inside nodes and inside saver
//     write transactions, with every durability mode; the resumed run
//     reaches the uninterrupted run's state without re-running committed
//     work.
//   - [PausedServer]: a graph server process (package server, with a
//     server.Backend) SIGSTOPped past its run lease while another process
//     took its run over; once resumed, none of its events, results or
//     checkpoints lands. Its children run [ServerChild], wired by the
//     server backends' test packages.
package durabilitytest
