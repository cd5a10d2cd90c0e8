/* The floor of a recording relay on pipes, for bench_proxy.py: what a separate
 * process that reads, records and forwards every chunk costs with no Python and
 * no checks at all.
 *
 *   relay_floor [--log FILE] -- CMD [ARG...]
 *
 * Starts CMD with its stdin and stdout on pipes and relays this process's stdin
 * to CMD and CMD's stdout to this process's stdout, one thread, with the system
 * calls of wireproto's relay per chunk: one poll, one read, one write of a
 * log record (a line "# TIME DIR SIZE": CLOCK_MONOTONIC seconds once the chunk
 * was read, send or recv, its size; then the chunk's bytes as they are: not the
 * --trace format, no JSON check) and one write forwarding the chunk. Not a
 * product: it assumes a blocking writer is fine. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const char *data, ssize_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, (size_t)size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += n;
        size -= n;
    }
    return 0;
}

int main(int argc, char **argv) {
    int trace = -1, first = 1;
    if (argc > 3 && strcmp(argv[1], "--log") == 0) {
        trace = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (trace < 0) { perror("relay_floor: log"); return 2; }
        first = 3;
    }
    if (first >= argc - 1 || strcmp(argv[first], "--") != 0) {
        fprintf(stderr, "usage: relay_floor [--log FILE] -- CMD [ARG...]\n");
        return 2;
    }
    int to_agent[2], from_agent[2];
    if (pipe2(to_agent, O_CLOEXEC) || pipe2(from_agent, O_CLOEXEC)) { perror("pipe"); return 2; }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        dup2(to_agent[0], 0);
        dup2(from_agent[1], 1);
        execvp(argv[first + 1], argv + first + 1);
        perror("relay_floor: exec");
        _exit(127);
    }
    close(to_agent[0]);
    close(from_agent[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {from_agent[0], POLLIN, 0}};
    int dst[2] = {to_agent[1], 1};
    static const char *dirs[2] = {"send", "recv"};
    static char buf[65536];
    char head[96];
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (!fds[k].revents) continue;
            ssize_t n = read(fds[k].fd, buf, sizeof buf);
            if (n <= 0) {
                if (k == 1) goto done;  /* the agent's end: the relay's */
                close(to_agent[1]);     /* the client's end: close the agent's input */
                to_agent[1] = -1;
                fds[0].fd = -1;
                continue;
            }
            if (trace >= 0) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                int size = snprintf(head, sizeof head, "# %ld.%06ld %s %zd\n",
                                    (long)now.tv_sec, now.tv_nsec / 1000, dirs[k], n);
                struct iovec parts[2] = {{head, (size_t)size}, {buf, (size_t)n}};
                if (writev(trace, parts, 2) < 0) { perror("relay_floor: log"); return 1; }
            }
            if (write_all(dst[k], buf, n) < 0) goto done;
        }
    }
done:
    if (to_agent[1] >= 0) close(to_agent[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
