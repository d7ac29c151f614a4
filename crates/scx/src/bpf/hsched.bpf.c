// SPDX-License-Identifier: GPL-2.0
/*
 * hsched's sched_ext scheduler: user space decides, the kernel enforces.
 *
 * This file is licensed under the GNU General Public License version 2 only,
 * unlike the Rust code of this project (MIT OR Apache-2.0): the kernel loads
 * a sched_ext scheduler only from a GPL-compatible BPF program. It is
 * compiled into an object that the Rust loader carries as data and hands to
 * the kernel; it is not linked into the Rust code.
 *
 * The split:
 *  - User space names the tasks it manages (the `managed` map) and writes,
 *    per CPU, a decision (the `decisions` array): run task `tid` until
 *    `until_ns` (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns()), run the
 *    default DSQ, or stay idle. After writing one it runs the `kick`
 *    syscall program, which preempts that CPU so that dispatch reads it.
 *  - A managed task that becomes runnable stays in this program's custody
 *    (it is recorded in `queued`, not inserted into any DSQ) until a
 *    decision names it; dispatch then inserts it into the CPU's local DSQ
 *    with slice = until - now, so the kernel enforces the horizon.
 *  - Tasks user space does not manage go to a shared default DSQ, which a
 *    CPU whose decision is "run the default" consumes (FIFO).
 *  - Wakeups, blocks, switches (running, stopping), forks and exits of
 *    managed tasks reach user space through the `events` ring buffer.
 *  - What a managed task creates is managed from its creation: user space
 *    learns of it from its fork event, before its first wakeup.
 *  - The fast path on wakeup: user space may arm a task on a CPU (`armed`),
 *    predicting that its hierarchy will give it that CPU as soon as it
 *    wakes. At that wakeup this program inserts it there at once, for at
 *    most FAST_SLICE_NS, and preempts what runs, without waiting for user
 *    space; user space then decides as always, and where it decides
 *    otherwise its decision preempts the task back into custody.
 *  - User space also records which CPU's decision names each task
 *    (`wanted`): a task named there that enters custody (preempted on
 *    another CPU, say) kicks that CPU, whose dispatch may have found it
 *    missing a moment before.
 *
 * Whole machine (`hsched live`'s default; the loader clears
 * SCX_OPS_SWITCH_PARTIAL below before loading): every SCHED_NORMAL task is scheduled here; those user
 * space does not manage wait in the default DSQ, and user space hears when
 * that queue starts to hold tasks and when a CPU running the default finds
 * it empty (EVENT_OTHERS), so that its hierarchy can count them as one
 * thread of its default scheduler and give them time as it gives any
 * thread. Partial mode (SCX_OPS_SWITCH_PARTIAL): only tasks whose policy
 * is SCHED_EXT are scheduled here; the fair class runs before them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

#define MAX_CPUS 256
#define DEFAULT_DSQ 0
#define SLICE_DEFAULT_NS 5000000ULL
/* The longest a task dispatched at its wakeup runs before user space decides. */
#define FAST_SLICE_NS 1000000ULL

/* The kinds of a decision; 0, what a fresh map holds, runs the default. */
#define DECISION_RUN_DEFAULT 0
#define DECISION_RUN_TASK 1
#define DECISION_IDLE 2

/* The kinds of an event. */
#define EVENT_RUNNABLE 1
#define EVENT_QUIESCENT 2
#define EVENT_EXIT 3
#define EVENT_FORK 4
#define EVENT_RUNNING 5
#define EVENT_STOPPING 6
#define EVENT_OTHERS 7

struct decision {
	u32 kind;
	u32 tid;
	u64 until_ns;
};

struct event {
	u32 kind;
	u32 tid;
	u32 cpu;
	u32 other; /* a fork's parent; a stopping task still runnable; others ready */
	u64 time_ns;
};

struct kick_args {
	s32 cpu;
};

/* Why the scheduler stopped, for user space to read after unload. */
struct exit_record {
	s32 kind;
	s32 pad;
	s64 exit_code;
	char reason[128];
	char msg[1024];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, u32);
	__type(value, struct decision);
} decisions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* Tasks user space manages (tid -> 1). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u8);
} managed SEC(".maps");

/* Managed tasks in this program's custody, runnable (tid -> when). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} queued SEC(".maps");

/* The CPU whose decision names a task (tid -> cpu), as user space wrote. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, s32);
} wanted SEC(".maps");

/*
 * What dispatch did, counted per CPU for user space (the order of
 * `Stats` in the loader): a decided task inserted, the running one's
 * slice extended, the default consumed, a decision whose horizon had
 * passed, one whose task was not in custody (not runnable, or running
 * elsewhere), one whose task may not run on this CPU; and a task
 * dispatched at its wakeup by the fast path (counted at enqueue).
 */
enum hsched_stat {
	STAT_INSERTED,
	STAT_EXTENDED,
	STAT_DEFAULT,
	STAT_LATE,
	STAT_MISSING,
	STAT_NOT_ALLOWED,
	STAT_FAST,
	HSCHED_NR_STATS,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HSCHED_NR_STATS);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

static void count(enum hsched_stat which)
{
	u32 key = which;
	u64 *n = bpf_map_lookup_elem(&stats, &key);

	if (n)
		(*n)++;
}

/* Tasks armed for the fast path on wakeup (tid -> cpu), by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, s32);
} armed SEC(".maps");

struct exit_record exit_record;

/* Whether unmanaged tasks wait in the default DSQ, as last told to user space. */
u32 others_ready;

/*
 * kfuncs. vmlinux.h made by bpftool 7.1 has no kfunc prototypes. All are
 * weak, so that the program loads on kernels that have only the older name
 * of one (6.12: scx_bpf_dispatch, scx_bpf_consume), and the code checks
 * which one exists.
 */
extern void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags) __ksym __weak;
extern void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags) __ksym __weak;
extern bool scx_bpf_dsq_move_to_local(u64 dsq_id) __ksym __weak;
extern bool scx_bpf_consume(u64 dsq_id) __ksym __weak;
extern s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __ksym __weak;
extern void scx_bpf_kick_cpu(s32 cpu, u64 flags) __ksym __weak;
extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle) __ksym __weak;
extern s32 scx_bpf_task_cpu(const struct task_struct *p) __ksym __weak;
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask) __ksym;

static void insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{
	if (bpf_ksym_exists(scx_bpf_dsq_insert))
		scx_bpf_dsq_insert(p, dsq_id, slice, enq_flags);
	else
		scx_bpf_dispatch(p, dsq_id, slice, enq_flags);
}

static bool move_to_local(u64 dsq_id)
{
	if (bpf_ksym_exists(scx_bpf_dsq_move_to_local))
		return scx_bpf_dsq_move_to_local(dsq_id);
	return scx_bpf_consume(dsq_id);
}

static bool is_managed(struct task_struct *p)
{
	u32 tid = p->pid;

	return bpf_map_lookup_elem(&managed, &tid) != NULL;
}

/*
 * Switches (running, stopping while still runnable) do not wake user
 * space: they are for its figures, read when something else wakes it.
 * Woken by each, a decider sharing a CPU with the tasks it schedules would
 * preempt one, which is a switch, which wakes it again. (Nor does
 * quiescent, which the stopping before it has told.) Every other event
 * forces the wakeup: by default the ring buffer wakes its reader only when
 * it has read everything before, and the switches left unread would keep
 * it asleep (seen: a thread's block heard only at the agent's next timer,
 * so that two thirds of the fast path's armings came after the wakeup
 * they were for).
 */
static u64 wakeup_flags(u32 kind, u32 other)
{
	if (kind == EVENT_RUNNING || kind == EVENT_QUIESCENT || (kind == EVENT_STOPPING && other))
		return BPF_RB_NO_WAKEUP;
	return BPF_RB_FORCE_WAKEUP;
}

static void emit_with(u32 kind, struct task_struct *p, u32 other)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return;
	e->kind = kind;
	e->tid = p->pid;
	e->cpu = bpf_get_smp_processor_id();
	e->other = other;
	e->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, wakeup_flags(kind, other));
}

static void emit(u32 kind, struct task_struct *p)
{
	emit_with(kind, p, 0);
}

/* Tells user space that unmanaged tasks now wait, or no longer do. */
static void others(u32 ready)
{
	struct event *e;

	if (__sync_lock_test_and_set(&others_ready, ready) == ready)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;
	e->kind = EVENT_OTHERS;
	e->tid = 0;
	e->cpu = bpf_get_smp_processor_id();
	e->other = ready;
	e->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, wakeup_flags(EVENT_OTHERS, ready));
}

static struct decision *decision_of(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&decisions, &key);
}

s32 BPF_STRUCT_OPS(hsched_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;

	/* A managed task stays where it was: user space places it. */
	if (is_managed(p))
		return prev_cpu;
	/* No direct insert: an unmanaged task waits in the default DSQ. */
	return scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
}

void BPF_STRUCT_OPS(hsched_enqueue, struct task_struct *p, u64 enq_flags)
{
	u32 tid = p->pid;
	u64 now = bpf_ktime_get_ns();
	s32 cpu = scx_bpf_task_cpu(p);
	struct decision *d;

	if (is_managed(p)) {
		s32 *target;

		target = (enq_flags & SCX_ENQ_WAKEUP) ? bpf_map_lookup_elem(&armed, &tid) : NULL;
		if (target) {
			s32 fast = *target;

			/* Armed once: the prediction is for this wakeup. */
			bpf_map_delete_elem(&armed, &tid);
			if (bpf_cpumask_test_cpu(fast, p->cpus_ptr)) {
				count(STAT_FAST);
				insert(p, SCX_DSQ_LOCAL_ON | fast, FAST_SLICE_NS, SCX_ENQ_HEAD);
				scx_bpf_kick_cpu(fast, SCX_KICK_PREEMPT);
				return;
			}
		}
		/* Custody: the task waits here until a decision names it. */
		bpf_map_update_elem(&queued, &tid, &now, BPF_ANY);
		target = bpf_map_lookup_elem(&wanted, &tid);
		if (target)
			scx_bpf_kick_cpu(*target, SCX_KICK_PREEMPT);
		return;
	}
	d = decision_of(cpu);
	if ((enq_flags & SCX_ENQ_LAST) && d && d->kind == DECISION_RUN_DEFAULT) {
		/* The last runnable task of a CPU that runs the default. */
		insert(p, SCX_DSQ_LOCAL, SLICE_DEFAULT_NS, enq_flags);
		return;
	}
	insert(p, DEFAULT_DSQ, SLICE_DEFAULT_NS, enq_flags);
	others(1);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

void BPF_STRUCT_OPS(hsched_dequeue, struct task_struct *p, u64 deq_flags)
{
	u32 tid = p->pid;

	/* Leaves custody without a decision (e.g. its affinity changed). */
	bpf_map_delete_elem(&queued, &tid);
}

void BPF_STRUCT_OPS(hsched_dispatch, s32 cpu, struct task_struct *prev)
{
	struct decision *d = decision_of(cpu);
	struct task_struct *p;
	u64 now = bpf_ktime_get_ns();
	u64 *since, enqueued_at;
	u32 tid;

	if (!d)
		return;
	if (d->kind == DECISION_RUN_DEFAULT) {
		count(STAT_DEFAULT);
		if (!move_to_local(DEFAULT_DSQ))
			others(0);
		return;
	}
	if (d->kind != DECISION_RUN_TASK)
		return; /* idle */
	if (d->until_ns <= now) {
		count(STAT_LATE);
		return; /* the horizon passed: wait for user space */
	}
	tid = d->tid;
	/* The task named still runs here: extend its slice to the horizon. */
	if (prev && prev->pid == tid && (prev->scx.flags & SCX_TASK_QUEUED)) {
		count(STAT_EXTENDED);
		prev->scx.slice = d->until_ns - now;
		return;
	}
	since = bpf_map_lookup_elem(&queued, &tid);
	if (!since) {
		count(STAT_MISSING);
		return; /* not runnable, or not in custody */
	}
	enqueued_at = *since;
	p = bpf_task_from_pid(tid);
	if (!p)
		return;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		count(STAT_NOT_ALLOWED);
	else {
		count(STAT_INSERTED);
		/* At the head: before what the default left in the local DSQ. */
		insert(p, SCX_DSQ_LOCAL, d->until_ns - now, SCX_ENQ_HEAD);
		/*
		 * Forget the custody this insert ends, not a newer one: a task
		 * on another CPU's runqueue can be dequeued and enqueued again
		 * meanwhile (the kernel then drops this insert), and its new
		 * record must stay. The window left between this check and the
		 * delete is a limitation of this first step.
		 */
		since = bpf_map_lookup_elem(&queued, &tid);
		if (since && *since == enqueued_at)
			bpf_map_delete_elem(&queued, &tid);
	}
	bpf_task_release(p);
}

void BPF_STRUCT_OPS(hsched_runnable, struct task_struct *p, u64 enq_flags)
{
	if (is_managed(p))
		emit(EVENT_RUNNABLE, p);
}

void BPF_STRUCT_OPS(hsched_quiescent, struct task_struct *p, u64 deq_flags)
{
	if ((deq_flags & SCX_DEQ_SLEEP) && is_managed(p))
		emit(EVENT_QUIESCENT, p);
}

void BPF_STRUCT_OPS(hsched_running, struct task_struct *p)
{
	if (is_managed(p))
		emit(EVENT_RUNNING, p);
}

void BPF_STRUCT_OPS(hsched_stopping, struct task_struct *p, bool runnable)
{
	if (is_managed(p))
		emit_with(EVENT_STOPPING, p, runnable);
}

/*
 * Called in the creating task's context for a fork: a task created by a
 * managed one is managed from the start, so that it waits in custody from
 * its first wakeup, and user space hears of it before that.
 */
s32 BPF_STRUCT_OPS(hsched_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	u32 parent = (u32)bpf_get_current_pid_tgid();
	u32 tid = p->pid;
	u8 yes = 1;

	if (!args->fork || !bpf_map_lookup_elem(&managed, &parent))
		return 0;
	bpf_map_update_elem(&managed, &tid, &yes, BPF_ANY);
	emit_with(EVENT_FORK, p, parent);
	return 0;
}

void BPF_STRUCT_OPS(hsched_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	u32 tid = p->pid;

	if (!is_managed(p))
		return;
	emit(EVENT_EXIT, p);
	bpf_map_delete_elem(&queued, &tid);
	bpf_map_delete_elem(&wanted, &tid);
	bpf_map_delete_elem(&armed, &tid);
	bpf_map_delete_elem(&managed, &tid);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(hsched_init)
{
	return scx_bpf_create_dsq(DEFAULT_DSQ, -1);
}

void BPF_STRUCT_OPS(hsched_exit, struct scx_exit_info *ei)
{
	exit_record.kind = ei->kind;
	exit_record.exit_code = ei->exit_code;
	bpf_probe_read_kernel_str(exit_record.reason, sizeof(exit_record.reason), ei->reason);
	bpf_probe_read_kernel_str(exit_record.msg, sizeof(exit_record.msg), ei->msg);
}

/* Run by user space (BPF_PROG_RUN) after it wrote a CPU's decision. */
SEC("syscall")
int kick(struct kick_args *args)
{
	scx_bpf_kick_cpu(args->cpu, SCX_KICK_PREEMPT);
	return 0;
}

SEC(".struct_ops.link")
struct sched_ext_ops hsched_ops = {
	.select_cpu = (void *)hsched_select_cpu,
	.enqueue = (void *)hsched_enqueue,
	.dequeue = (void *)hsched_dequeue,
	.dispatch = (void *)hsched_dispatch,
	.runnable = (void *)hsched_runnable,
	.quiescent = (void *)hsched_quiescent,
	.running = (void *)hsched_running,
	.stopping = (void *)hsched_stopping,
	.init_task = (void *)hsched_init_task,
	.exit_task = (void *)hsched_exit_task,
	.init = (void *)hsched_init,
	.exit = (void *)hsched_exit,
	.flags = SCX_OPS_SWITCH_PARTIAL | SCX_OPS_ENQ_LAST,
	.timeout_ms = 5000,
	.name = "hsched",
};
