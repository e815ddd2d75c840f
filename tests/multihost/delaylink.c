// delaylink: a network link with added latency (and optionally a rate limit) in user space, for
// kernels without sch_netem. It creates two TAP devices, A and B, and forwards every Ethernet
// frame read from one to the other, holding each frame until its release time:
//
//   release = max(read time + delay, when the previous frame of that direction has been sent)
//   sent    = release + frame bytes x 8 / rate               (no rate: sent = release)
//
// so frames keep their order and each direction behaves like a FIFO link of the given one-way
// delay and bit rate. Both directions are configured separately (--ab-*, --ba-*).
//
//   delaylink --a NAME --b NAME [--ab-delay-ms D] [--ba-delay-ms D] [--ab-rate-mbit R]
//             [--ba-rate-mbit R] [--queue-mb Q] [--owner PID] [--pidfile FILE] [--log FILE]
//             [--no-offload]
//
// Contract:
//   - The TAPs are not persistent: they vanish when this process exits, however it exits. The
//     caller may move them into other network namespaces, rename them, enslave them to bridges
//     once they exist (the open file descriptors keep working across namespaces).
//   - Without --pidfile it runs in the foreground. With --pidfile it goes to the background once
//     both TAPs exist: the parent writes the child's pid to FILE and exits 0 (so the caller can
//     configure the TAPs right after), or exits 1 with a message if anything failed before.
//     The background process reads nothing, writes nothing to stdout, and sends its stderr to
//     --log FILE (default /dev/null).
//   - It exits 0 on SIGTERM, SIGINT or SIGHUP, and as soon as the process --owner PID has exited
//     (a pidfd; a zombie counts as exited), printing per-direction counters to stderr; 1 on a
//     fatal error (also when a TAP is deleted, e.g. with the network namespace it was moved to).
//   - Offload (default): both TAPs carry a virtio-net header (IFF_VNET_HDR) and accept checksum
//     and TCP segmentation offload (TUNSETOFFLOAD), so TCP's 64 KiB GSO frames and partial
//     checksums pass through unchanged, as through a veth pair; --no-offload forwards plain
//     frames of at most the MTU instead.
//   - Queue: each direction holds at most --queue-mb MiB (default 16) of frames. While a
//     direction's queue is full its input TAP is not read (backpressure); the kernel then drops
//     frames once that TAP's own queue is full (txqueuelen, 1000 frames by default), as a
//     router drops at a full buffer.
//     A frame the output TAP refuses (e.g. the device is down) is dropped and counted.
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_FRAME = 65536 + 256, // a 64 KiB GSO frame plus virtio-net and Ethernet headers
    REC_ALIGN = 16,          // records (header + frame) start at multiples of this
    READ_BATCH = 64,         // frames read per direction per loop turn
    WRAP = UINT32_MAX,       // record length marking "continue at the buffer's start"
};

// one queued frame: this header, then len bytes, padded to REC_ALIGN
struct rec {
    int64_t release_ns;
    uint32_t len;
    uint32_t pad;
};

// one direction: frames read from fd_in wait in a ring buffer until their release time, then are
// written to fd_out. The ring holds whole records; head == tail is empty when nrec == 0.
struct dir {
    const char *name; // "a->b" or "b->a", for messages
    int fd_in, fd_out;
    size_t hdr; // bytes of virtio-net header before each frame (0 without offload)
    int64_t delay_ns;
    double ns_per_byte;   // 0: no rate limit
    int64_t link_free_ns; // when the previous frame has been sent (rate limit)
    unsigned char *buf;
    size_t cap, head, tail, nrec, bytes;
    uint64_t frames, fwd_bytes, drops, max_bytes;
};

static void vmsg(const char *fmt, va_list ap) {
    fputs("delaylink: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

static _Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
    exit(1);
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static size_t rec_size(size_t len) { return (sizeof(struct rec) + len + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN; }

// The record at the head, after skipping a wrap mark (or a tail too short for a header).
static struct rec *ring_front(struct dir *d) {
    if (d->cap - d->head < sizeof(struct rec) || ((struct rec *)(d->buf + d->head))->len == WRAP) d->head = 0;
    return (struct rec *)(d->buf + d->head);
}

// Room for a record of MAX_FRAME bytes at the tail (moving the tail to the buffer's start when the
// end is too short), or NULL while the queue is full.
static struct rec *ring_reserve(struct dir *d) {
    size_t need = rec_size(MAX_FRAME);
    if (d->nrec == 0) d->head = d->tail = 0;
    if (d->nrec == 0 || d->tail > d->head) {
        if (d->cap - d->tail >= need) return (struct rec *)(d->buf + d->tail);
        if (d->head < need) return NULL;
        if (d->cap - d->tail >= sizeof(struct rec)) ((struct rec *)(d->buf + d->tail))->len = WRAP;
        d->tail = 0;
    }
    return d->head - d->tail >= need ? (struct rec *)(d->buf + d->tail) : NULL;
}

static void ring_push(struct dir *d, struct rec *r, size_t len, int64_t read_ns) {
    int64_t release = read_ns + d->delay_ns;
    if (release < d->link_free_ns) release = d->link_free_ns;
    d->link_free_ns = release + (int64_t)(d->ns_per_byte * (double)(len - d->hdr));
    r->release_ns = release;
    r->len = (uint32_t)len;
    d->tail += rec_size(len);
    d->nrec++;
    d->bytes += len;
    if (d->bytes > d->max_bytes) d->max_bytes = d->bytes;
}

static void ring_pop(struct dir *d, struct rec *r) {
    d->head += rec_size(r->len);
    d->nrec--;
    d->bytes -= r->len;
}

// Read up to READ_BATCH frames from d's input into its queue. Returns 0, or -1 when the input
// failed for good (the message is printed).
static int pump_in(struct dir *d) {
    for (int i = 0; i < READ_BATCH; i++) {
        struct rec *r = ring_reserve(d);
        if (!r) return 0;
        ssize_t n = read(d->fd_in, r + 1, MAX_FRAME);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            msg("%s: read: %s", d->name, strerror(errno));
            return -1;
        }
        if ((size_t)n < d->hdr) die("%s: read a %zd-byte frame, shorter than its header", d->name, n);
        ring_push(d, r, (size_t)n, now_ns());
    }
    return 0;
}

// Write every frame whose release time has come. Returns 1 if the output would block (wait for
// POLLOUT), 0 otherwise.
static int pump_out(struct dir *d, int64_t now) {
    while (d->nrec > 0) {
        struct rec *r = ring_front(d);
        if (r->release_ns > now) return 0;
        ssize_t n = write(d->fd_out, r + 1, r->len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return errno == EAGAIN;
        if (n < 0)
            d->drops++; // e.g. EIO while the output device is down: the frame is lost
        else {
            d->frames++;
            d->fwd_bytes += r->len - d->hdr;
        }
        ring_pop(d, r);
    }
    return 0;
}

// Open /dev/net/tun as TAP device NAME (created, not persistent). With offload, frames carry a
// virtio-net header and the kernel may hand over GSO frames with partial checksums.
static int tap_open(const char *name, int offload) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("open /dev/net/tun: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
    if (strlen(name) >= IFNAMSIZ) die("TAP name '%s' is longer than %d characters", name, IFNAMSIZ - 1);
    strcpy(ifr.ifr_name, name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) die("create TAP '%s' (TUNSETIFF): %s", name, strerror(errno));
    unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
    if (offload && ioctl(fd, TUNSETOFFLOAD, off) < 0)
        die("TAP '%s': TUNSETOFFLOAD: %s (try --no-offload)", name, strerror(errno));
    return fd;
}

struct opts {
    const char *a, *b, *pidfile, *log;
    double delay_ms[2], rate_mbit[2], queue_mb, owner; // [0]: a->b, [1]: b->a; owner 0: none
    int offload;
};

static double num_arg(const char *flag, const char *v, double lo, double hi) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi))
        die("%s: '%s' is not a number in [%g, %g]", flag, v, lo, hi);
    return x;
}

static void usage(void) {
    die("usage: delaylink --a NAME --b NAME [--ab-delay-ms D] [--ba-delay-ms D] [--ab-rate-mbit R] "
        "[--ba-rate-mbit R] [--queue-mb Q] [--owner PID] [--pidfile FILE] [--log FILE] [--no-offload]");
}

static struct opts parse(int argc, char **argv) {
    struct opts o = {.queue_mb = 16, .offload = 1};
    const struct {
        const char *flag;
        const char **str;    // a string option, or
        double *num, lo, hi; // a number in [lo, hi]
    } opt[] = {
        {"--a", .str = &o.a},
        {"--b", .str = &o.b},
        {"--pidfile", .str = &o.pidfile},
        {"--log", .str = &o.log},
        {"--ab-delay-ms", NULL, &o.delay_ms[0], 0, 10000},
        {"--ba-delay-ms", NULL, &o.delay_ms[1], 0, 10000},
        {"--ab-rate-mbit", NULL, &o.rate_mbit[0], 0.001, 1e6},
        {"--ba-rate-mbit", NULL, &o.rate_mbit[1], 0.001, 1e6},
        {"--queue-mb", NULL, &o.queue_mb, 1, 4096},
        {"--owner", NULL, &o.owner, 1, 1 << 30},
    };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-offload")) {
            o.offload = 0;
            continue;
        }
        size_t k = 0;
        while (k < sizeof opt / sizeof opt[0] && strcmp(argv[i], opt[k].flag)) k++;
        if (k == sizeof opt / sizeof opt[0] || i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (opt[k].str)
            *opt[k].str = v;
        else
            *opt[k].num = num_arg(opt[k].flag, v, opt[k].lo, opt[k].hi);
    }
    if (!o.a || !o.b) usage();
    return o;
}

static void dir_init(struct dir *d, const char *name, int in, int out, const struct opts *o, int k) {
    memset(d, 0, sizeof *d);
    d->name = name;
    d->fd_in = in;
    d->fd_out = out;
    d->hdr = o->offload ? sizeof(struct virtio_net_hdr) : 0;
    d->delay_ns = (int64_t)(o->delay_ms[k] * 1e6);
    d->ns_per_byte = o->rate_mbit[k] > 0 ? 8e3 / o->rate_mbit[k] : 0;
    d->cap = (size_t)(o->queue_mb * 1048576) / REC_ALIGN * REC_ALIGN;
    d->buf = malloc(d->cap);
    if (!d->buf) die("cannot allocate a %.0f MiB queue", o->queue_mb);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// Close every descriptor above 2 but the n in keep (which it sorts): the background process must
// not hold its caller's pipes (a shell reading our caller's output would wait for us) or locks.
static void close_fds_except(int *keep, int n) {
    qsort(keep, (size_t)n, sizeof *keep, cmp_int);
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] < 0) continue;
        if ((unsigned)keep[i] > lo) close_range(lo, (unsigned)keep[i] - 1, 0);
        lo = (unsigned)keep[i] + 1;
    }
    close_range(lo, ~0U, 0);
}

// With --pidfile: fork; the parent records the child and exits, the child detaches, keeping only
// stdio and the n descriptors in keep (negative ones are ignored).
static void background(const struct opts *o, int *keep, int n) {
    if (!o->pidfile) return;
    int devnull = open("/dev/null", O_RDWR);
    int logfd = o->log ? open(o->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644) : dup(devnull);
    if (devnull < 0 || logfd < 0) die("open %s: %s", o->log ? o->log : "/dev/null", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid > 0) {
        FILE *f = fopen(o->pidfile, "w");
        if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0) {
            kill(pid, SIGTERM);
            die("write %s: %s", o->pidfile, strerror(errno));
        }
        _exit(0);
    }
    setsid();
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(logfd, 2);
    close_fds_except(keep, n);
}

// Block the stop signals and return a signalfd that reports them.
static int stop_signals(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGHUP);
    sigprocmask(SIG_BLOCK, &s, NULL);
    int fd = signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) die("signalfd: %s", strerror(errno));
    return fd;
}

// Nanoseconds until the earliest queued frame of a direction not waiting for POLLOUT is due, or
// -1 if there is none.
static int64_t next_due(struct dir *d, const int *blocked, int64_t now) {
    int64_t due = -1;
    for (int i = 0; i < 2; i++) {
        if (d[i].nrec == 0 || blocked[i]) continue;
        int64_t w = ring_front(&d[i])->release_ns - now;
        if (w < 0) w = 0;
        if (due < 0 || w < due) due = w;
    }
    return due;
}

// A pidfd of process pid (readable once it has exited), or -1 for pid 0.
static int owner_fd(pid_t pid) {
    if (!pid) return -1;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) die("--owner %d: pidfd_open: %s", (int)pid, strerror(errno));
    return fd;
}

// Forward until a stop signal, the owner's exit or a failed device; returns which.
static const char *forward(struct dir *d, int sigfd, int ownerfd) {
    for (;;) {
        int blocked[2];
        for (int i = 0; i < 2; i++) blocked[i] = pump_out(&d[i], now_ns());
        struct pollfd p[6] = {{.fd = sigfd, .events = POLLIN}, {.fd = ownerfd, .events = POLLIN}};
        int np = 2, in_at[2] = {-1, -1};
        for (int i = 0; i < 2; i++) {
            if (blocked[i]) p[np++] = (struct pollfd){.fd = d[i].fd_out, .events = POLLOUT};
            if (ring_reserve(&d[i])) {
                in_at[i] = np;
                p[np++] = (struct pollfd){.fd = d[i].fd_in, .events = POLLIN};
            }
        }
        int64_t wait = next_due(d, blocked, now_ns());
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        if (ppoll(p, (nfds_t)np, wait < 0 ? NULL : &ts, NULL) < 0 && errno != EINTR) die("ppoll: %s", strerror(errno));
        if (p[0].revents) return "signal";
        if (p[1].revents) return "owner process gone";
        for (int i = 0; i < 2; i++) {
            if (in_at[i] < 0 || !p[in_at[i]].revents) continue;
            if (p[in_at[i]].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                msg("%s: the input TAP failed (deleted, or its network namespace removed)", d[i].name);
                return "input device failed";
            }
            if (pump_in(&d[i]) < 0) return "input device failed";
        }
    }
}

int main(int argc, char **argv) {
    struct opts o = parse(argc, argv);
    int fa = tap_open(o.a, o.offload), fb = tap_open(o.b, o.offload);
    struct dir d[2];
    dir_init(&d[0], "a->b", fa, fb, &o, 0);
    dir_init(&d[1], "b->a", fb, fa, &o, 1);
    int ownerfd = owner_fd((pid_t)o.owner), keep[3] = {fa, fb, ownerfd};
    background(&o, keep, 3);
    prctl(PR_SET_TIMERSLACK, 1UL); // wake up at the release time, not up to 50 us later
    int sigfd = stop_signals();
    const char *why = forward(d, sigfd, ownerfd);
    for (int i = 0; i < 2; i++) {
        msg("%s %s: %llu frames, %llu bytes forwarded, %llu dropped, at most %llu bytes queued", o.a, d[i].name,
            (unsigned long long)d[i].frames, (unsigned long long)d[i].fwd_bytes, (unsigned long long)d[i].drops,
            (unsigned long long)d[i].max_bytes);
        free(d[i].buf);
    }
    msg("%s: stopped (%s)", o.a, why);
    return strcmp(why, "input device failed") == 0;
}
