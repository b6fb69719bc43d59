/* The floor for any client that reads each chunk of a streamed answer:
 * one epoll loop on one thread, one read() and one clock reading per
 * readable socket, and a byte scan for "data:" lines. It keeps no records
 * and parses no JSON: what it spends per token is what the kernel and the
 * bare minimum of user space cost, the yardstick for goodput's own CPU per
 * token (bench/client_overhead.sh runs both against the same server).
 *
 *   floor HOST PORT STREAMS REQUESTS OUTPUT_TOKENS
 *
 * Keeps STREAMS connections busy until REQUESTS answers have ended (each at
 * its "data: [DONE]"), then prints one line of key=value: the requests, the
 * data events and the "data:" lines seen, the wall time, the CPU time
 * (user, system) and the TTFT p50/p99 in ms (first data event after the
 * send, each on its read's clock).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF (64 * 1024)

struct conn {
  int fd;
  double sent;      /* when the request went, s */
  int got_first;    /* a data event came for this request */
  int tail;         /* bytes of a "data:" line cut by a read */
  char carry[16];
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static char request[1024];
static int request_len;

static int send_request(struct conn *c) {
  int off = 0;
  while (off < request_len) {
    ssize_t n = write(c->fd, request + off, request_len - off);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return -1;
    }
    off += n;
  }
  c->sent = now();
  c->got_first = 0;
  c->tail = 0;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: floor HOST PORT STREAMS REQUESTS OUTPUT_TOKENS\n");
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]), streams = atoi(argv[3]);
  long requests = atol(argv[4]), tokens = atol(argv[5]);
  if (streams < 1 || requests < 1 || tokens < 1) {
    fprintf(stderr, "floor: STREAMS, REQUESTS and OUTPUT_TOKENS must be at least 1\n");
    return 2;
  }
  char body[256];
  int body_len = snprintf(body, sizeof body,
                          "{\"model\":\"goodput-fixed\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                          "\"max_tokens\":%ld,\"stream\":true}",
                          tokens);
  request_len = snprintf(request, sizeof request,
                         "POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         host, port, body_len, body);

  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "floor: HOST must be an IPv4 address, not %s\n", host);
    return 2;
  }
  int ep = epoll_create1(0);
  struct conn *conns = calloc(streams, sizeof *conns);
  double *ttft = calloc(requests, sizeof *ttft);
  char *buf = malloc(BUF);
  if (!conns || !ttft || !buf) return 1;
  long started = 0, ended = 0, events = 0, firsts = 0;
  double t0 = now();
  for (int i = 0; i < streams && started < requests; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
      perror("floor: connect");
      return 1;
    }
    conns[i].fd = fd;
    if (send_request(&conns[i]) < 0) {
      perror("floor: write");
      return 1;
    }
    started++;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  struct epoll_event ready[256];
  while (ended < requests) {
    int n = epoll_wait(ep, ready, 256, 10000);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "floor: no answer for 10 s (%ld of %ld ended)\n", ended, requests);
      return 1;
    }
    for (int k = 0; k < n; k++) {
      struct conn *c = ready[k].data.ptr;
      /* The carried bytes first, so a "data:" split across reads is seen. */
      memcpy(buf, c->carry, c->tail);
      ssize_t r = read(c->fd, buf + c->tail, BUF - c->tail);
      double t = now();
      if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        fprintf(stderr, "floor: the server closed a connection mid-answer\n");
        return 1;
      }
      size_t len = c->tail + r;
      int done = 0;
      /* What is carried to the next read: the last 4 bytes (the start of a
       * "data:" cut by the read), or from a "data:" with under 12 bytes
       * after its start, which "data: [DONE]" needs to be told. */
      size_t keep = len >= 4 ? len - 4 : 0;
      for (size_t i = 0; i + 5 <= len; i++) {
        if (buf[i] != 'd' || memcmp(buf + i, "data:", 5) != 0) continue;
        if (i + 12 > len) {
          keep = i;
          break;
        }
        events++;
        if (!c->got_first) {
          c->got_first = 1;
          if (firsts < requests) ttft[firsts++] = t - c->sent;
        }
        if (memcmp(buf + i + 5, " [DONE]", 7) == 0) done = 1;
        i += 4;
      }
      c->tail = (int)(len - keep);
      memcpy(c->carry, buf + keep, c->tail);
      if (done) {
        ended++;
        /* The rest of the answer's framing is read and scanned with the
         * next answer's bytes; nothing in it looks like "data:". */
        c->tail = 0;
        if (started < requests) {
          started++;
          if (send_request(c) < 0) {
            perror("floor: write");
            return 1;
          }
        }
      }
    }
  }
  double wall = now() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  qsort(ttft, firsts, sizeof *ttft, cmp);
  double p50 = firsts ? ttft[(long)(0.50 * (firsts - 1))] : 0, p99 = firsts ? ttft[(long)(0.99 * (firsts - 1))] : 0;
  printf("requests=%ld events=%ld wall_s=%.3f user_s=%.3f sys_s=%.3f ttft_p50_ms=%.2f ttft_p99_ms=%.2f\n", ended, events,
         wall, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, p50 * 1e3,
         p99 * 1e3);
  return 0;
}
