//! `rialto`: the Rialto scheduler as a policy — CPU reservations on a
//! precomputed scheduling graph plus time constraints, over the building
//! blocks [`super::graph`] and [`super::constraints`].
//!
//! **Source.** Jones, Roşu & Roşu, "CPU Reservations and Time Constraints"
//! (SOSP '97): §2.3 (reservations per activity), §2.4 (time constraints),
//! §3 (the scheduling graph, interval assignment, EDF in assigned time,
//! round robin within an activity and among activities for the rest), §4.2
//! (constraint inheritance across mutexes and RPCs), §4.5 (the
//! second-chance queue) and §4.6 (next-thread selection, rules 1–5).
//! The state is in `state.rs`, the parameters and [`grants`] in
//! `params.rs`, the callbacks in `scheduler.rs`, the messages in
//! `requests.rs`, selection in `select.rs` over the queues of `queues.rs`
//! and the walk of `walk.rs`, the consistency check in `invariants.rs`.
//!
//! **Children and messages.** A child (a thread) attaches with `activity`
//! (a string; empty or absent: the thread is an activity of its own).
//! Threads of one activity share its reservation. The `placement`
//! parameter (`"B@0.0 A@1.0"`) pins named activities' reservations to graph
//! nodes (`DEPTH.NODE`), to reproduce a given layout such as the paper's
//! Figure 3-1. A thread sends:
//! - `reserve { amount, period }`: reserve for its activity; replies
//!   `Ok { amount, period, rebuilt }` with the grant (the period scaled down
//!   to `base * 2^k`, the amount scaled with it, rounded up), or `Err` with
//!   the graph's refusal (over capacity, period too short, ...);
//! - `release`: drops its activity's reservation (`Ok { amount, period }`);
//! - `begin_constraint { start, estimate, deadline, critical, relative }`:
//!   `start` and `deadline` are instants (time since 0; with `relative =
//!   true`, from now), `start` defaults to now; replies `Ok { id, start,
//!   deadline, estimate, critical, inherited, stolen, assigned }` (the
//!   effective values, §4.4; `inherited`: time taken over from the
//!   enclosing constraint when nested; `stolen`: time a critical constraint
//!   took from its activity's non-critical ones, §4.3; `assigned`: the
//!   interval assignment, e.g. `"244ms-248ms 257ms-258ms"`) or `Err` saying
//!   how much could be found;
//! - `end_constraint`: ends the thread's innermost constraint; replies
//!   `Ok { taken, released }` (`taken`: the CPU time the thread received
//!   while the constraint was in effect). A refused (infeasible)
//!   `begin_constraint` stays *pending as denied* until the thread's next
//!   `end_constraint`, which then answers `Ok { taken, released: 0,
//!   denied: true }`;
//! - `lock { mutex }` (an integer): takes a free mutex (`Err` if held: the
//!   thread should then send `block_on` and block); `block_on { mutex }`:
//!   the thread waits for the mutex's holder (`Err` on a free mutex or a
//!   wait-for cycle); `unlock { mutex }`: releases it, handing it to the
//!   first waiter (`Ok { handed_over }`). These are for mutexes the
//!   platform does not report: the simulator's own mutexes and RPC calls
//!   reach the policy without messages, through `Scheduler::sync` (see
//!   below);
//! - `rpc_serve { port }` (an integer): the thread becomes the server of
//!   the port (`Err` if the port has one);
//! - `rpc_call { port }`: the thread calls the port's server and should
//!   block next (sleep, or wait for a mutex) until the server replies.
//!   From the call to the reply the server is scheduled as a member of the
//!   caller's activity (the outermost caller's, for nested calls; §4.2:
//!   "RPC service threads ... belong to the caller's activity and inherit
//!   all of the caller's scheduling attributes"): it runs in that
//!   activity's reserved intervals, second chance and round-robin turns,
//!   and while the caller is blocked it inherits the caller's constraint
//!   as a mutex holder does. Its CPU time is charged where its run was
//!   chosen: the caller's activity's intervals and turns, its second-chance
//!   debt, or the inherited constraint's share of the node (its own
//!   constraint, if any, counts what it runs as always). `Err` if the port
//!   has no server, the server serves another call or is blocked, the call
//!   would close a cycle (the sender serves the port, or the server waits
//!   for the sender), or the sender is itself waiting (after a `block_on`
//!   or an `rpc_call` of its own);
//! - `rpc_reply`: the server ends the call it serves and goes back to its
//!   own activity (`Err` if it serves none); the graph VP re-decides if it
//!   ran there for the caller.
//!
//! **The platform's mutexes and RPCs** (`Scheduler::sync`, `requests.rs`):
//! a child taking, blocking on or releasing a platform mutex, and a child
//! server taking or ending a child client's call, drive the same
//! inheritance book as the messages, in a separate name space, whatever
//! the mutex's declared protocol; the platform chooses who gets a released
//! mutex and the book follows. Events naming a thread of another scheduler
//! are not delivered (a holder there is lent nothing).
//!
//! A thread that leaves ends the call it makes (its server goes back to its
//! own activity), the call it serves (its caller waits no more) and closes
//! its ports. A server's `reserve`, `release` and constraints are its own
//! activity's, in a call too.
//!
//! When the graph changes (`reserve`, `release`, the last thread of a
//! reserved activity leaving) the constraint book is rebuilt over the new
//! graph and the open constraints are carried over by re-admitting each
//! (in id order, so outer before inner) with what it has not yet received
//! and its remaining window. Accepted constraints are promises, so a
//! `reserve` that would leave one of them without its time is refused
//! (the reply names the constraint); after a `release` (which only frees
//! time) one that no longer fits, which can only be the releasing
//! activity's, is dropped (its `end_constraint` then answers `Err`).
//!
//! **Decisions (§4.6).** Base period `i` starts at the absolute instant
//! `i * base`; a *node* is the graph interval (switch + run) of
//! [`Graph::period`](crate::rialto::graph::Graph::period)`(now / base)` that holds `now` (without a base period
//! everything is one free node). On the *graph VP* (`ParentVp(0)`), the
//! paper's rules in order:
//! 1. with less than `threshold` left in the node, the next node is used;
//! 2. among the constraints owning assigned time in the node, earliest
//!    deadline first, one whose effective start has come, that has not
//!    received its guaranteed time and not yet used its share of the node,
//!    and whose thread waits — or is blocked on a mutex or in a call and the
//!    thread at the end of its inheritance chain waits (§4.2): that thread
//!    runs until the share is used, the node ends, or it unlocks or replies;
//! 3. in a node reserved for an activity, a waiting thread of it: threads
//!    with pending denied constraints, then threads with late constraints
//!    (guaranteed time used, or past the deadline; both earliest deadline
//!    first), then round robin; for at most `quantum`;
//! 4. an activity of the second-chance queue with a waiting thread, chosen
//!    the same way, for at most what it has left to make up;
//! 5. the round-robin queue of activities (the first with a waiting thread
//!    goes to the back), a thread chosen the same way, for `quantum`.
//!
//! *Round robin* (§3.4, §3.5). Threads wait in their activity's line, and
//! activities in the activities' line, by turn. A thread picked in steps
//! 3–5 goes to the back of its activity's line when it is picked (assigned
//! time in step 2 does not cost it its place); an activity picked in step 5
//! goes to the back of the activities' line. A thread that wakes takes a
//! fresh turn at the back of its activity's line; an activity none of
//! whose threads was waiting or running takes a fresh turn at the back of
//! the activities' line when one wakes (or an RPC server joins it). So a
//! briefly sleeping thread or activity queues behind those that kept
//! running, the one running at its wake-up included (it went to the back
//! when it was picked): free time is plain round robin, and 50ms of work
//! waking among `N` CPU-bound activities with a 10ms quantum takes about
//! `50 + 50N` ms after the rest of the quantum running at its wake-up (the
//! paper's Fig. 5-5).
//!
//! The second-chance queue (§4.5): when an activity's last runnable thread
//! releases during a node reserved for it (graph VP held), or its RPC
//! server replies then and leaves it with none, the rest of the node is
//! recorded as lost, valid until the activity's next node starts; waking
//! inside the same node takes back what is left of it; time run in step 4
//! pays it off.
//!
//! Every horizon is cut at the end of the current node, so each node
//! boundary re-decides. A waking child that outranks (by rule) what the
//! graph VP runs preempts it; a timer at a constraint's future start does
//! too; `block_on`, `rpc_call` and `rpc_reply` re-decide when they change
//! the answer. Other VPs use rule 5 alone with `quantum`. The policy is
//! work conserving: it answers `Release` only when nothing waits.
//!
//! **Cost of a decision.** With `n` threads, `A` activities and `C` open
//! constraints, `vp_grant`, `vp_request` and `vp_release` (with their
//! preemption checks) and `charge` cost `O(log n + log A)` plus, where they
//! apply: `O(k log k)` for the `k` constraints owning assigned time in the
//! node (rule 2 takes them in EDF order until one can run, walking its
//! chain of waits, `O(log n)` a step); `O(m log n)` for the `m` waiting
//! threads of the chosen activity with a pending denied or an open
//! constraint (rule 3's first two classes); `O(R log R)` for the `R`
//! entries of the second-chance queue (reserved activities only). The node
//! holding `now` is a binary search in the kept walk of the current and the
//! next base period (`O(log p)` for `p` intervals on a path), rebuilt with
//! [`Graph::period`](crate::rialto::graph::Graph::period) once per base period and at each graph change; an
//! activity blocking in its own node finds its next node in that walk, or
//! else walks up to a hyperperiod (reservations of more than two base
//! periods). Nothing scans the threads or the activities: the queues of
//! `queues.rs` change in `O(log n)` with each thread. So with CPU-bound
//! threads in many activities and a few reservations and constraints, a
//! decision is `O(log n)` (the paper's §4.6 gets `O(1)` with intrusive
//! lists; ordered maps keep this deterministic and simple). Without a base
//! period the one node holds every open constraint's pieces (`k = C`).
//! Messages cost more (`reserve` rebuilds the graph and re-admits every
//! open constraint; `begin_constraint` walks its window).
//!
//! **Several CPUs: `multiprocessor`.** `"one"` (the default, the
//! behaviour above): one graph, followed by `ParentVp(0)`; the other VPs
//! run rule 5 alone. `"partitioned"`: one graph (and constraint book,
//! walk, second-chance records) per VP the instance holds, each built as
//! on one CPU, and `ParentVp(v)` follows graph `v` by the same rules 1–5.
//! An activity is *placed* on a VP by its first granted `reserve`
//! (`place.rs`: `fit = "first"`, the lowest VP whose graph grants it, or
//! `"worst"`, the VP left with the largest free share of its hyperperiod,
//! ties to the lowest; the reply adds `vp`); a refusal names each VP's
//! load. The placement lasts until the activity's last thread leaves: a
//! later `reserve` is admitted on that VP only (refused, not moved, if it
//! does not fit there), `release` keeps it there. Its threads run on that
//! VP only (its intervals, constraints, second chance and round-robin
//! turns there): nothing is proven for a migrating activity, so none
//! migrates. An RPC server runs where the activity it is scheduled in
//! runs (its caller's, during a call); inherited constraint time (§4.2) goes
//! only to a chain end that may run on the constraint's VP. Activities
//! without a VP are promised nothing and run round robin in any VP's free
//! time (rule 5 takes the earlier turn of the unplaced lane and the VP's
//! own lane); they cannot open a time constraint (refused: "reserve
//! first"), since a constraint is admitted on its activity's VP and
//! placing the activity then could send its `reserve` where the analysis's
//! replay does not. The VPs asked of the parent: each VP whose placed
//! activities have a runnable thread, plus one more per runnable unplaced
//! thread, lowest first. `placement` pins take an optional VP prefix
//! (`A@1:0.0`; VP 0 without one, and only VP 0 in mode `"one"`); a pinned
//! activity is placed on its pin's VP. `"global"` is refused at build time:
//! no published multiprocessor test exists for Rialto's graph.
//!
//! **Guarantee.** Holding one CPU through `ParentVp(0)` without a platform
//! tick: an activity granted `(X', Y')` one of whose threads is waiting or
//! running on that CPU at every instant of its intervals receives, in every
//! window `[T, T + Y')`, at least `X'` of CPU time minus the real context
//! switch cost in excess of the configured `switch_cost` at the start of each
//! of its intervals (the graph reserves `switch_cost + run` per interval and
//! the whole interval goes to the activity's threads, the constraints of the
//! same activity included, since assigned pieces in an activity's interval
//! are that activity's, and an RPC server during a call). An accepted constraint whose thread stays runnable
//! from its effective start to its deadline receives its guaranteed time by
//! its deadline: in each interval where it owns `p` of assigned time it
//! runs `p` ahead of anything else there (the pieces in one interval fit in
//! its run part), and its pieces add up to the guaranteed time inside its
//! window. Both hold with `threshold = 0` (the default); a positive
//! `threshold` may give up to `threshold` of each node to the next node's
//! choice (rule 1). Inherited runs (§4.2) use only the waiter's constraint's
//! own pieces. With a tick, each interval may start up to one tick late (a
//! horizon takes effect at the next tick).
//! Partitioned, the same holds on each VP for the activities placed there,
//! provided the parent gives every VP a whole CPU (ALL on each: one VP per
//! CPU under the root or an `fp` top priority): the graphs are independent
//! and a placed activity's time comes from its own VP's graph only.
//!
//! **Implemented.** §3 graph and interval assignment, §4.3 criticality,
//! §4.4 nesting (in [`super::constraints`]); §4.6 rules 1–5; §4.5 second
//! chance; §4.2 inheritance across mutexes and RPCs, reported by the platform or by
//! message.
//!
//! **Limits.** In mode `"one"` only `ParentVp(0)` follows the graph: on
//! several CPUs the other VPs use free-time round robin (a reserved thread
//! gets at least its guarantee, possibly more), and if the parent never
//! grants `ParentVp(0)` nothing is guaranteed. Partitioned: no migration,
//! so no re-placement when a VP fills up; an activity's placement is not
//! revisited after a `release`; a mutex holder placed on another VP than
//! its constrained waiter inherits nothing (priority inversion across CPUs
//! is not handled); graphs are added as VPs appear and never removed. A server stands for Rialto's per-call service
//! thread: it serves one call at a time (a busy server refuses), and the
//! caller must block by itself after `rpc_call` (a message cannot block a
//! thread); from the call to the reply the caller counts as waiting in the
//! inheritance book, so it cannot `lock`, `block_on` or call meanwhile.
//! Not done: inheritance for a thread blocked on a mutex *without* a
//! constraint whose activity has nothing else runnable (only constrained
//! waiters pass their time on; an RPC caller's activity does go to its
//! server, which is in it); the chain is walked on every decision without
//! path compression (the building block's `runs_for` needs `&mut`); a thread that leaves while blocked keeps the
//! mutexes it holds in the inheritance book (others it holds are handed
//! on); rule 3's preference for denied/late threads acts at decisions and
//! does not preempt; the second-chance record is the rest of the node at
//! the block, not time actually displaced; `activity` cannot be an integer
//! (a child parameter has one kind; use a string), no admission control at
//! `register_vp`.

mod invariants;
mod params;
mod queues;
mod requests;
mod scheduler;
mod select;
mod state;
mod walk;

pub use params::{grants, Grant, DEFAULT_QUANTUM, INFO};
pub use state::{Activity, Rialto};
