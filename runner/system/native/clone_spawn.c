/* Spawn a task straight into its cgroup: clone3(CLONE_INTO_CGROUP), built by runner/system/clone_spawn.py.

Why: joining a cgroup by writing cgroup.procs after the fork makes the kernel wait for an RCU
grace period whenever no migration happened in the last few milliseconds (11-12 ms, every
spaced-out agent call). A child created inside the cgroup never migrates, so it costs nothing,
and it is in the task's cgroup from its first instruction.

How: vfork-style, as glibc's posix_spawn: CLONE_VM | CLONE_VFORK on a small stack of our own,
the parent thread suspended until the child execs (or fails, which it reports through the
shared struct). With `local`, the child is created on the caller's CPU (the caller is pinned
to it for the clone) and given back the caller's own CPU set before it execs: the caller
sleeps until the exec anyway, and a child placed on an idle CPU first waits for that CPU to
wake (on a virtual machine ~0.2 ms). The caller asks for it only after a quiet spell, when
the other CPUs are likely asleep; a busy caller gains more from the child running beside it.
All signals are blocked around the clone so no handler of the runner ever runs on the child's
stack; CLONE_CLEAR_SIGHAND resets the runner's handlers in the child. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "clone_spawn: only the x86_64 trampoline is written; the runner falls back to the shell shim"
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define STACK_BYTES (64 * 1024)

enum { STAGE_NONE = 0, STAGE_SETUP = 1, STAGE_CHDIR = 2, STAGE_EXEC = 3 };

struct child {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    int fds[3];
    sigset_t mask;        /* the caller's mask, restored in the child before exec */
    cpu_set_t cpus;       /* the caller's CPU set, the child's own again before exec */
    int pinned;           /* whether the caller was pinned to its CPU for the clone */
    volatile int err;     /* written by the child (shared memory) when it cannot exec */
    volatile int stage;
};

static void fail(struct child *c, int stage) {
    c->err = errno ? errno : EINVAL;
    c->stage = stage;
    _exit(127);
}

static int child_main(void *arg) {
    struct child *c = arg;
    /* Its own session: one killpg reaches the task's tree, a terminal's ^C never does. */
    if (setsid() < 0) fail(c, STAGE_SETUP);
    /* Move any pipe end sitting on 0-2 out of the way before the dup2s overwrite it. */
    for (int i = 0; i < 3; i++) {
        if (c->fds[i] >= 0 && c->fds[i] < 3) {
            int moved = fcntl(c->fds[i], F_DUPFD_CLOEXEC, 3);
            if (moved < 0) fail(c, STAGE_SETUP);
            c->fds[i] = moved;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (c->fds[i] >= 0 && dup2(c->fds[i], i) < 0) fail(c, STAGE_SETUP);
    }
    /* As subprocess's close_fds=True: nothing of the runner's (sockets, the ledger) leaks in. */
    syscall(SYS_close_range, 3U, ~0U, 0U);
    if (c->cwd && chdir(c->cwd) < 0) fail(c, STAGE_CHDIR);
    /* Python ignores these two; subprocess's restore_signals gives a child the defaults. */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    if (c->pinned && sched_setaffinity(0, sizeof c->cpus, &c->cpus) < 0) fail(c, STAGE_SETUP);
    sigprocmask(SIG_SETMASK, &c->mask, NULL);
    execve(c->path, c->argv, c->envp);
    fail(c, STAGE_EXEC);
    return 127;
}

/* clone3 with a new stack: the child cannot return from a C function (its stack is not the
   caller's), so it calls fn(arg) on the new stack and exits with its result. */
static long clone3_call(struct clone_args *args, int (*fn)(void *), void *arg) {
    long ret;
    register long r8 __asm__("r8") = (long)fn;
    register long r9 __asm__("r9") = (long)arg;
    __asm__ volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "xor %%ebp, %%ebp\n\t"
        "and $-16, %%rsp\n\t"
        "mov %%r9, %%rdi\n\t"
        "call *%%r8\n\t"
        "mov %%eax, %%edi\n\t"
        "mov $60, %%eax\n\t"
        "syscall\n\t"
        "hlt\n\t"
        "1:\n\t"
        : "=a"(ret)
        : "a"((long)SYS_clone3), "D"(args), "S"(sizeof(*args)), "r"(r8), "r"(r9)
        : "rcx", "r11", "memory");
    return ret;
}

/* Pins the calling thread to the CPU it runs on, keeping its own set in c (a set the kernel
   cannot describe in a cpu_set_t, over 1024 CPUs, is left alone: the clone goes unpinned). */
static void pin_to_this_cpu(struct child *c) {
    c->pinned = 0;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof c->cpus, &c->cpus) < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    c->pinned = sched_setaffinity(0, sizeof one, &one) == 0;
}

/* Points out[0..n-1] at the n NUL-terminated strings laid end to end in blob; out[n] = NULL. */
static void split(const char *blob, long n, char **out) {
    for (long i = 0; i < n; i++) {
        out[i] = (char *)blob;
        blob += strlen(blob) + 1;
    }
    out[n] = NULL;
}

/* Returns the child's pid (its pidfd in *pidfd_out), or -errno with *stage_out saying which step
   failed (0: the clone itself, as when the kernel lacks clone3 or CLONE_INTO_CGROUP).
   argv and envp come as argc and envc strings laid end to end, each NUL-terminated: the caller
   builds one buffer per list rather than one C string per item. local: start it on this CPU. */
long plugkit_spawn(const char *path, const char *argv_blob, long argc, const char *env_blob, long envc,
                   const char *cwd, int cgroup_fd, int in_fd, int out_fd, int err_fd, int local, int *pidfd_out,
                   int *stage_out) {
    *stage_out = STAGE_NONE;
    *pidfd_out = -1;
    if (argc < 1 || envc < 0) return -EINVAL;
    char **lists = malloc(sizeof(char *) * (size_t)(argc + 1 + envc + 1));
    if (lists == NULL) return -ENOMEM;
    split(argv_blob, argc, lists);
    split(env_blob, envc, lists + argc + 1);
    struct child c = {.path = path, .argv = lists, .envp = lists + argc + 1, .cwd = cwd,
                      .fds = {in_fd, out_fd, err_fd}, .stage = STAGE_NONE};
    int pidfd = -1;
    sigset_t all;
    void *stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        int err = errno;
        free(lists);
        return -err;
    }
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_CLEAR_SIGHAND;
    if (cgroup_fd >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)cgroup_fd;
    }
    args.pidfd = (uint64_t)(uintptr_t)&pidfd;
    args.exit_signal = SIGCHLD;
    args.stack = (uint64_t)(uintptr_t)stack;
    args.stack_size = STACK_BYTES;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &c.mask);
    if (local) pin_to_this_cpu(&c);
    long pid = clone3_call(&args, child_main, &c);
    if (c.pinned) sched_setaffinity(0, sizeof c.cpus, &c.cpus);
    pthread_sigmask(SIG_SETMASK, &c.mask, NULL);
    munmap(stack, STACK_BYTES);
    free(lists);
    if (pid < 0) return pid;
    if (c.stage != STAGE_NONE) {
        /* The child never ran the program: reap it here, so no zombie is left to anyone. */
        while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR) {}
        if (pidfd >= 0) close(pidfd);
        *stage_out = c.stage;
        return -c.err;
    }
    *pidfd_out = pidfd;
    return pid;
}
