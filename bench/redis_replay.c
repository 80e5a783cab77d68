/* bench/redis_replay.c: replays a recorded stream of SET/GET/DEL on one Redis server through plain hiredis, one
 * connection and thread per recorded connection, to tell what a client does to the server from what its op mix does
 * (docs/performance.md, "Remote tier: where the time goes"). bench/redis_ops.sh records kvio's stream.
 *
 * usage: redis_replay HOST PORT OPS asis|fast
 *   OPS: one op a line, "T_S CONN SET KEY BYTES", "T_S CONN GET KEY BYTES" or "T_S CONN DEL KEY N" (T_S seconds from
 *   the recording's start; CONN any integer naming a connection; DEL deletes KEY's chunk keys "PREFIX:0".."PREFIX:N-1"
 *   where KEY is "PREFIX:0"). asis: each op starts no earlier than T_S after the replay's start (the recorded pacing);
 *   fast: each connection sends its ops back to back. Either way a GET waits until the SET of its key recorded
 *   before it has been answered (on whichever connection), and a DEL until every op recorded before it has: each
 *   reads and deletes what the recorded one did.
 * prints one JSON line: {"sets", "gets", "dels", "set_bytes", "get_bytes", "wall_s", "in_flight_s", "busy_s",
 *   "errors"}: in_flight_s = seconds with at least one op in flight on any connection (CLOCK_MONOTONIC), busy_s =
 *   the sum over ops. Exit 1 on a server error reply, an I/O error or a bad OPS line (named by line). */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OP_SET, OP_GET, OP_DEL };
struct op {
    double t;
    long conn;
    int kind;
    char key[256];
    long long n; /* SET/GET bytes, DEL chunk count */
    double t0, t1;
    struct op* dep; /* a GET's key: the latest SET of it before the GET in the recording, NULL when none */
    size_t idx;     /* its line in the recording */
    int done;       /* a SET's reply received (under mu) */
};
struct conn {
    long id;
    struct op** ops;
    size_t n, cap;
    int errors;
    pthread_t th;
};

static const char* host;
static int port, asis;
static char* value; /* zeros, the largest SET */
static struct timespec start;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct op** all; /* in recorded order */
static size_t nops;

/* Under mu: whether every op recorded before `o` has been answered (a DEL waits for it: it must not delete what a
 * lagging connection has still to read). */
static int before_done(const struct op* o) {
    for (size_t j = 0; j < o->idx; j++)
        if (!all[j]->done) return 0;
    return 1;
}

static double since(const struct timespec* a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static int run_op(redisContext* c, struct op* o) {
    redisReply* r = NULL;
    if (o->kind == OP_SET) {
        const char* argv[3] = {"SET", o->key, value};
        size_t len[3] = {3, strlen(o->key), (size_t)o->n};
        r = redisCommandArgv(c, 3, argv, len);
    } else if (o->kind == OP_GET) {
        const char* argv[2] = {"GET", o->key};
        size_t len[2] = {3, strlen(o->key)};
        r = redisCommandArgv(c, 2, argv, len);
        if (r && r->type == REDIS_REPLY_STRING) o->n = (long long)r->len;
    } else {
        size_t plen = strlen(o->key) - 2; /* "PREFIX:0" -> "PREFIX" */
        char** argv = calloc((size_t)o->n + 1, sizeof *argv);
        size_t* len = calloc((size_t)o->n + 1, sizeof *len);
        argv[0] = "DEL", len[0] = 3;
        for (long long i = 0; i < o->n; i++) {
            argv[i + 1] = malloc(plen + 24);
            len[i + 1] = (size_t)snprintf(argv[i + 1], plen + 24, "%.*s:%lld", (int)plen, o->key, i);
        }
        r = redisCommandArgv(c, (int)o->n + 1, (const char**)argv, len);
        for (long long i = 0; i < o->n; i++) free(argv[i + 1]);
        free(argv), free(len);
    }
    if (!r) {
        fprintf(stderr, "redis_replay: %s: %s\n", o->key, c->errstr);
        return -1;
    }
    int bad = r->type == REDIS_REPLY_ERROR;
    if (bad) fprintf(stderr, "redis_replay: %s: %s\n", o->key, r->str);
    freeReplyObject(r);
    return bad ? -1 : 0;
}

static void* conn_main(void* arg) {
    struct conn* k = arg;
    struct timeval tv = {30, 0};
    redisContext* c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        fprintf(stderr, "redis_replay: cannot connect: %s\n", c ? c->errstr : "no memory");
        k->errors++;
        return NULL;
    }
    redisSetTimeout(c, tv);
    for (size_t i = 0; i < k->n; i++) {
        struct op* o = k->ops[i];
        if (asis) {
            double wait = o->t - since(&start);
            if (wait > 0) {
                struct timespec w = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
                nanosleep(&w, NULL);
            }
        }
        /* a GET waits for the SET it read in the recording (another connection's maybe), a DEL for every op before */
        pthread_mutex_lock(&mu);
        while ((o->dep && !o->dep->done) || (o->kind == OP_DEL && !before_done(o))) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        o->t0 = since(&start);
        if (run_op(c, o)) k->errors++;
        o->t1 = since(&start);
        pthread_mutex_lock(&mu);
        o->done = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        if (c->err) break;
    }
    redisFree(c);
    return NULL;
}

static int by_start(const void* a, const void* b) {
    double x = (*(struct op*const*)a)->t0, y = (*(struct op*const*)b)->t0;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    if (argc != 5 || (strcmp(argv[4], "asis") && strcmp(argv[4], "fast"))) {
        fprintf(stderr, "usage: redis_replay HOST PORT OPS asis|fast\n");
        return 2;
    }
    host = argv[1], port = atoi(argv[2]), asis = !strcmp(argv[4], "asis");
    FILE* f = fopen(argv[3], "r");
    if (!f) return perror(argv[3]), 1;
    struct conn* conns = NULL;
    size_t nconns = 0, line = 0;
    long long maxset = 1;
    char kind[8];
    for (;;) {
        struct op* o = calloc(1, sizeof *o);
        int got = fscanf(f, "%lf %ld %7s %255s %lld", &o->t, &o->conn, kind, o->key, &o->n);
        ++line;
        if (got == EOF) {
            free(o);
            break;
        }
        o->kind = !strcmp(kind, "SET") ? OP_SET : !strcmp(kind, "GET") ? OP_GET : !strcmp(kind, "DEL") ? OP_DEL : -1;
        if (got != 5 || o->kind < 0 || o->n < 0 || (o->kind == OP_DEL && strlen(o->key) < 3)) {
            fprintf(stderr, "redis_replay: %s:%zu: expected \"T_S CONN SET|GET|DEL KEY N\"\n", argv[3], line);
            return 1;
        }
        if (o->kind == OP_SET && o->n > maxset) maxset = o->n;
        o->idx = nops;
        all = realloc(all, (nops + 1) * sizeof *all), all[nops++] = o;
        size_t j = 0;
        while (j < nconns && conns[j].id != o->conn) j++;
        if (j == nconns) conns = realloc(conns, ++nconns * sizeof *conns), memset(&conns[j], 0, sizeof *conns);
        conns[j].id = o->conn;
        if (conns[j].n == conns[j].cap)
            conns[j].cap = conns[j].cap ? 2 * conns[j].cap : 64,
            conns[j].ops = realloc(conns[j].ops, conns[j].cap * sizeof *conns[j].ops);
        conns[j].ops[conns[j].n++] = o;
    }
    fclose(f);
    for (size_t i = 0; i < nops; i++) /* ops are in recorded order: the SET a GET read is an earlier line */
        for (size_t j = i; all[i]->kind == OP_GET && j-- > 0;)
            if (all[j]->kind == OP_SET && !strcmp(all[j]->key, all[i]->key)) {
                all[i]->dep = all[j];
                break;
            }
    value = malloc((size_t)maxset);
    memset(value, 'x', (size_t)maxset); /* resident before the clock starts */
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t j = 0; j < nconns; j++) pthread_create(&conns[j].th, NULL, conn_main, &conns[j]);
    int errors = 0;
    for (size_t j = 0; j < nconns; j++) pthread_join(conns[j].th, NULL), errors += conns[j].errors;
    double wall = since(&start), busy = 0, infl = 0, end = -1;
    long long sets = 0, gets = 0, dels = 0, sb = 0, gb = 0;
    qsort(all, nops, sizeof *all, by_start);
    for (size_t i = 0; i < nops; i++) {
        struct op* o = all[i];
        if (o->t1 <= 0) continue; /* never run: its connection failed */
        busy += o->t1 - o->t0;
        if (o->t0 >= end)
            infl += o->t1 - o->t0, end = o->t1;
        else if (o->t1 > end)
            infl += o->t1 - end, end = o->t1;
        if (o->kind == OP_SET) sets++, sb += o->n;
        if (o->kind == OP_GET) gets++, gb += o->n;
        if (o->kind == OP_DEL) dels++;
    }
    printf(
        "{\"sets\":%lld,\"gets\":%lld,\"dels\":%lld,\"set_bytes\":%lld,\"get_bytes\":%lld,\"wall_s\":%.6f,"
        "\"in_flight_s\":%.6f,\"busy_s\":%.6f,\"errors\":%d}\n",
        sets, gets, dels, sb, gb, wall, infl, busy, errors);
    return errors ? 1 : 0;
}
