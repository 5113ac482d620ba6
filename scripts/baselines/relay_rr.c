/* Relay baseline for scripts/side-by-side-relay.sh: the socket work of
   lobbyd's game-instance relay with no relay logic at all, and a client that drives lobbyd's
   instances and this server alike.

   usage: relay_rr server PORT FANOUT
            blocking: one recvfrom per datagram, then FANOUT sendto of the same bytes, as lobbyd
            sends a DATA to the FANOUT other members of its room: to the FANOUT ports that
            share the sender's group of FANOUT + 1 consecutive ports (port / (FANOUT + 1)) on
            the sender's address, so the destinations come from arithmetic, not a table.
          relay_rr rooms PORT FANOUT GROUPS
            the same relay with lobbyd's socket layout: one socket per room (GROUPS sockets on
            PORT, PORT + 1, ...), as the instance protocol gives each room its own port, so
            the server must wait on all of them: a blocking epoll_wait (level-triggered), then
            one recvfrom per ready socket and FANOUT sendto from that socket, as above.
          relay_rr connected PORT FANOUT
            the same relay with one socket per member, all bound to PORT with SO_REUSEPORT: a
            group's first datagram reaches the unconnected one, which then opens a socket
            connected to each member of that group, so the kernel hands each member's later
            datagrams to its own socket and a send to it skips the route lookup; a
            blocking epoll_wait (level-triggered), one recvfrom per ready socket and FANOUT
            send through the mates' sockets (the per-member-socket design, measured without
            lobbyd's batching).
          relay_rr client SECONDS FANOUT < PLAN
            PLAN: one line per member socket, "GROUP FD DEST_IPV4 DEST_PORT HEX_DATAGRAM", the
            sockets inherited open (set up by the script: members of one lobbyd room, or
            sockets aimed at this server). Each group keeps one datagram in flight, as
            lobby-load relay does with one per room: its members take turns sending their
            datagram; once FANOUT copies (datagrams whose second byte is 0x04, DATA) arrived on
            the group's sockets, the next member sends. A group silent for 200 ms counts a
            timeout and sends again. Prints copies received per second as JSON. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MEMBERS 1024
#define MAX_GROUPS 256

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

struct member { int group, fd, len; struct sockaddr_in dest; unsigned char datagram[1500]; };
struct group { int first, count, next, copies; double sent; };

static struct member members[MAX_MEMBERS];
static struct group groups[MAX_GROUPS];
static int group_of_fd[65536];

static void send_next(struct group *g) {
  struct member *m = &members[g->first + g->next];
  g->next = (g->next + 1) % g->count;
  g->copies = 0;
  g->sent = now();
  sendto(m->fd, m->datagram, m->len, 0, (struct sockaddr *)&m->dest, sizeof m->dest);
}


/* recvfrom one datagram on s, then FANOUT sendto of it to the sender's group mates. */
static void relay_one(int s, int fanout, int block) {
  static char buf[65536];
  struct sockaddr_in from; socklen_t fl = sizeof from;
  ssize_t n = recvfrom(s, buf, sizeof buf, block ? 0 : MSG_DONTWAIT, (void *)&from, &fl);
  if (n < 0) return;
  int size = fanout + 1, sender = ntohs(from.sin_port), first = sender - sender % size;
  for (int p = first; p < first + size; p++) {
    if (p == sender) continue;
    from.sin_port = htons(p);
    sendto(s, buf, n, 0, (void *)&from, fl);
  }
}

/* A UDP socket bound to 127.0.0.1:port (with SO_REUSEPORT when reuse), connected to
   127.0.0.1:peer unless peer is 0. */
static int bound_to(int port, int reuse, int peer) {
  int s = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
  if (reuse && setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one)) { perror("SO_REUSEPORT"); return -1; }
  if (bind(s, (void *)&a, sizeof a)) { perror("bind"); return -1; }
  a.sin_port = htons(peer);
  if (peer && connect(s, (void *)&a, sizeof a)) { perror("connect"); return -1; }
  return s;
}

static int bound(int port) { return bound_to(port, 0, 0); }

static int watch(int ep, int s) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = s};
  return s < 0 ? -1 : epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
}

static int connected_server(int port, int fanout) {
  static int socket_of_port[65536];   /* a member's connected socket, 0 before its group's first datagram */
  static char buf[65536];
  int ep = epoll_create1(0);
  if (watch(ep, bound_to(port, 1, 0))) return 1;
  struct epoll_event events[256];
  for (;;) {
    int k = epoll_wait(ep, events, 256, -1);
    for (int e = 0; e < k; e++) {
      struct sockaddr_in from; socklen_t fl = sizeof from;
      ssize_t n = recvfrom(events[e].data.fd, buf, sizeof buf, MSG_DONTWAIT, (void *)&from, &fl);
      if (n < 0) continue;
      int size = fanout + 1, sender = ntohs(from.sin_port), first = sender - sender % size;
      if (first + size > 65536) continue;   /* a group past the last port: not one of ours */
      for (int p = first; p < first + size; p++)
        if (!socket_of_port[p] && watch(ep, socket_of_port[p] = bound_to(port, 1, p))) return 1;
      for (int p = first; p < first + size; p++)
        if (p != sender) send(socket_of_port[p], buf, n, 0);
    }
  }
}

static int rooms_server(int port, int fanout, int groups) {
  int ep = epoll_create1(0);
  for (int g = 0; g < groups; g++) {
    int s = bound(port + g);
    if (s < 0) return 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
  }
  struct epoll_event events[256];
  for (;;) {
    int k = epoll_wait(ep, events, 256, -1);
    for (int e = 0; e < k; e++) relay_one(events[e].data.fd, fanout, 0);
  }
}

static int client(double secs, int fanout) {
  int n = 0, ngroups = 0; char hex[3100], ip[64];
  int group, fd, port;
  while (n < MAX_MEMBERS && scanf("%d %d %63s %d %3099s", &group, &fd, ip, &port, hex) == 5) {
    struct member *m = &members[n];
    if (group < 0 || group >= MAX_GROUPS || fd < 0 || fd >= 65536) return 2;
    m->group = group; m->fd = fd; m->len = strlen(hex) / 2;
    for (int i = 0; i < m->len && i < 1500; i++) { unsigned v; sscanf(hex + 2 * i, "%2x", &v); m->datagram[i] = v; }
    m->dest.sin_family = AF_INET; m->dest.sin_port = htons(port); inet_pton(AF_INET, ip, &m->dest.sin_addr);
    if (group >= ngroups) { ngroups = group + 1; groups[group].first = n; }
    groups[group].count++;
    group_of_fd[fd] = group;
    n++;
  }
  if (n == 0) return 2;
  int ep = epoll_create1(0);
  for (int i = 0; i < n; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = members[i].fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, members[i].fd, &ev);
  }
  long copies = 0, cycles = 0, timeouts = 0;
  double t0 = now(), end = t0 + secs, last_sweep = t0;
  for (int g = 0; g < ngroups; g++) send_next(&groups[g]);
  static unsigned char buf[65536];
  struct epoll_event events[256];
  while (now() < end) {
    int k = epoll_wait(ep, events, 256, 10);
    for (int e = 0; e < k; e++) {
      int fd = events[e].data.fd; struct group *g = &groups[group_of_fd[fd]];
      for (;;) {
        ssize_t len = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (len < 0) break;
        if (len < 2 || buf[1] != 0x04) continue;
        copies++;
        if (++g->copies >= fanout) { cycles++; send_next(g); }
      }
    }
    double t = now();
    if (t - last_sweep > 0.01) {
      last_sweep = t;
      for (int i = 0; i < ngroups; i++)
        if (t - groups[i].sent > 0.2) { timeouts++; send_next(&groups[i]); }
    }
  }
  double el = now() - t0;
  printf("{\"copies\":%ld,\"cycles\":%ld,\"timeouts\":%ld,\"seconds\":%.2f,\"cps\":%.0f}\n",
         copies, cycles, timeouts, el, copies / el);
  return 0;
}

static int server(int port, int fanout) {
  int s = bound(port);
  if (s < 0) return 1;
  for (;;) relay_one(s, fanout, 1);
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "server")) return server(atoi(argv[2]), atoi(argv[3]));
  if (argc >= 5 && !strcmp(argv[1], "rooms"))
    return rooms_server(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  if (argc >= 4 && !strcmp(argv[1], "connected")) return connected_server(atoi(argv[2]), atoi(argv[3]));
  if (argc >= 4 && !strcmp(argv[1], "client")) return client(atof(argv[2]), atoi(argv[3]));
  fprintf(stderr, "usage: relay_rr server PORT FANOUT | relay_rr rooms PORT FANOUT GROUPS | relay_rr connected PORT FANOUT | relay_rr client SECONDS FANOUT < PLAN\n");
  return 2;
}
