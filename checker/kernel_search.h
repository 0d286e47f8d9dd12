/* The compiled breadth-first search, included by every model's kernel source (checker/kernel.py compiles it).

   A model's kernel source (e.g. spec/two_phase_kernel.c) defines, before it includes this file:
     km_state                    a struct of fixed-width integers, every byte meaningful (no padding)
     KM_MAX_SUCC                 a bound on the successors of one state
     KM_INVARIANTS               how many invariants it compiles (bit i of km_violations)
     km_successors(s, out)       every successor of s in the readable model's order, via km_emit
     km_violations(s)            the bit mask of the compiled invariants s violates
     km_canonical(s)             s in place in the readable model's canonical form (--symmetry)
   and after it the three functions (km_successors emits each successor with km_emit).
   Optional hooks, where the local engine (checker/bfs.py) applies the model's:
     KM_CONFIG(X)                the configuration's run-time constants, X(name) each, in the order of
                                 spec.model.KernelSource.config: the bounds and flags that only guard rules (a
                                 state's layout stays compile-time). The rules read them as config.name; one
                                 compiled library serves every value (checker/kernel.py writes them into the
                                 copy of the library it loads for a configuration: km_config_image)
     KM_HAS_REDUCE, km_reduce(s) s in place in the form --reduce dead stores (spec.model.KernelSource.reductions),
                                 applied before km_canonical, to every successor and initial state
   A kernel that meets a state past its fixed capacity sets out->error (nonzero: its own code) in km_successors;
   the level stops and km_expand_level returns -3 (km_error gives the code): never a silently different search.
   This file gives the search, level by level as checker/bfs.py runs it, storing what it needs and no
   more, as TLC does: a set of 64-bit fingerprints of the states seen (km_hash of the stored form),
   each state's parent index and its position among the parent's successors (a counterexample is
   replayed from its initial state on the kernel: km_replay), the initial states, and only the
   frontier whole (the current level and the next; the next goes on to an unlinked file past a
   size, km_set_spill). Also the first violation of each invariant, the first deadlock and the
   out-degree histogram. km_set_threads(k, N) expands each batch of the frontier in N threads (the
   successors, their stored form, fingerprints and violation masks into each thread's buffers) and
   merges the buffers in the frontier's order: the same counts and states at any N. Python drives it
   a level at a time (budgets, progress, traces: checker/kernel.py). */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KM_BYTES (sizeof(km_state))

/* The run-time constants (KM_CONFIG): one int32 each after a mark that checker/kernel.py finds in the library's
   bytes and overwrites in a configuration's copy of the library, so that each loaded copy holds its own and two
   configurations in one process (threads, the Spark driver, a story's replay) never see each other's. Hidden, not
   static: the compiler cannot take them for constants. */
#define KM_CONFIG_MARK "kmc config v1"
#define KM_CONFIG_FIELD(name) int32_t name;
#define KM_CONFIG_NAME(name) #name " "
#ifndef KM_CONFIG
#define KM_CONFIG(X)
#endif
typedef struct {
    char mark[16];
    KM_CONFIG(KM_CONFIG_FIELD)
} km_config_image;
__attribute__((visibility("hidden"))) km_config_image config = {KM_CONFIG_MARK};

typedef struct {
    uint32_t n;
    uint32_t error; /* a kernel's capacity code, 0: none */
    uint32_t act[KM_MAX_SUCC];
    km_state st[KM_MAX_SUCC];
} km_succ;

static void km_successors(const km_state *s, km_succ *out);
static uint32_t km_violations(const km_state *s);
static void km_canonical(km_state *s);
#ifdef KM_HAS_REDUCE
static void km_reduce(km_state *s);
#endif

/* A successor of s by the action with this code: a copy of s, for the rule to change (its effect). */
static inline km_state *km_emit(km_succ *out, const km_state *s, uint32_t code) {
    km_state *t = &out->st[out->n];
    out->act[out->n++] = code;
    *t = *s;
    return t;
}

/* A state's fingerprint: 64 bits of its packed bytes (the stored form). */
static uint64_t km_hash(const uint8_t *p) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)KM_BYTES;
    size_t i = 0;
    for (; i + 8 <= KM_BYTES; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < KM_BYTES) {
        uint64_t w = 0;
        memcpy(&w, p + i, KM_BYTES - i);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* -- the visited set: 64-bit fingerprints (km_hash of the stored form), as TLC keeps them ---------- */
typedef struct {
    uint64_t *slots;     /* open addressing, at most 3/4 full: 0 empty; the fingerprint 0 is held apart */
    uint64_t mask, n;
    int has_zero;
} km_visited;

static uint64_t km_slot(uint64_t fp, uint64_t mask) { return (fp ^ fp >> 29) & mask; }

/* 1 if the set holds fp (read only: the worker threads probe it while nothing is added) */
static int km_visited_has(const km_visited *v, uint64_t fp) {
    if (fp == 0) return v->has_zero;
    for (uint64_t h = km_slot(fp, v->mask); v->slots[h]; h = (h + 1) & v->mask)
        if (v->slots[h] == fp) return 1;
    return 0;
}

static int km_visited_grow(km_visited *v) {
    uint64_t cap = (v->mask + 1) * 2;
    uint64_t *slots = calloc(cap, sizeof(uint64_t));
    if (!slots) return -1;
    for (uint64_t i = 0; i <= v->mask; i++) {
        uint64_t fp = v->slots[i];
        if (!fp) continue;
        uint64_t h = km_slot(fp, cap - 1);
        while (slots[h]) h = (h + 1) & (cap - 1);
        slots[h] = fp;
    }
    free(v->slots);
    v->slots = slots;
    v->mask = cap - 1;
    return 0;
}

/* Add fp: 1 if it was new, 0 if the set held it, -2 out of memory. */
static int km_visited_add(km_visited *v, uint64_t fp) {
    if (fp == 0) {
        int was = v->has_zero;
        v->has_zero = 1;
        return !was;
    }
    uint64_t h = km_slot(fp, v->mask);
    for (; v->slots[h]; h = (h + 1) & v->mask)
        if (v->slots[h] == fp) return 0;
    v->slots[h] = fp;
    v->n++;
    if (v->n * 4 > (v->mask + 1) * 3 && km_visited_grow(v)) return -2;
    return 1;
}

/* -- a level of whole states: in memory, and past `spill` bytes in an unlinked file --------------- */
typedef struct {
    uint8_t *mem;        /* the states not in the file, in order after those in it */
    uint64_t n_mem, cap;
    FILE *file;          /* NULL until the level first spills */
    uint64_t n_file;     /* states in the file (the level's first) */
    uint64_t written;    /* states ever written to the file */
} km_level;

static uint64_t km_level_size(const km_level *l) { return l->n_file + l->n_mem; }

/* Append a state: 0, -2 out of memory, -4 the file could not be written. */
static int km_level_push(km_level *l, const uint8_t *p, uint64_t spill, const char *dir) {
    if (l->n_mem == l->cap) {
        uint64_t most = spill / KM_BYTES > 1 ? spill / KM_BYTES : 1; /* states held before a spill */
        if (spill && l->cap >= most) {
            if (!l->file) {
                char name[4096];
                snprintf(name, sizeof name, "%s/kmc-frontier-XXXXXX", dir ? dir : ".");
                int fd = mkstemp(name);
                if (fd < 0) return -4;
                unlink(name); /* gone with the process, whatever ends it */
                l->file = fdopen(fd, "w+b");
                if (!l->file) { close(fd); return -4; }
            }
            if (fwrite(l->mem, KM_BYTES, l->n_mem, l->file) != l->n_mem) return -4;
            l->n_file += l->n_mem;
            l->written += l->n_mem;
            l->n_mem = 0;
        } else {
            uint64_t cap = l->cap ? l->cap * 2 : 1024;
            if (spill && cap > most) cap = most > l->cap ? most : l->cap + 1;
            uint8_t *mem = realloc(l->mem, cap * KM_BYTES);
            if (!mem) return -2;
            l->mem = mem;
            l->cap = cap;
        }
    }
    memcpy(l->mem + l->n_mem++ * KM_BYTES, p, KM_BYTES);
    return 0;
}

/* The level is complete: its file (if any) holds it whole, to be read from the start. 0 or -4. */
static int km_level_seal(km_level *l) {
    if (!l->n_file) return 0;
    if (fwrite(l->mem, KM_BYTES, l->n_mem, l->file) != l->n_mem) return -4;
    l->n_file += l->n_mem;
    l->written += l->n_mem;
    l->n_mem = 0;
    return fflush(l->file) || fseek(l->file, 0, SEEK_SET) ? -4 : 0;
}

/* Empty, to be filled again (its buffer and file are kept). */
static int km_level_clear(km_level *l) {
    l->n_mem = l->n_file = 0;
    if (l->file && (fflush(l->file) || ftruncate(fileno(l->file), 0) || fseek(l->file, 0, SEEK_SET)))
        return -4;
    return 0;
}

/* States [at, at + n) of a sealed level, read in order: a pointer to them (in `room` when they are
   read from the file), NULL if the file could not be read. */
static const uint8_t *km_level_read(km_level *l, uint64_t at, uint64_t n, uint8_t *room) {
    if (!l->n_file) return l->mem + at * KM_BYTES;
    return fread(room, KM_BYTES, n, l->file) == n ? room : NULL;
}

static void km_level_free(km_level *l) {
    free(l->mem);
    if (l->file) fclose(l->file);
}

/* -- the search ---------------------------------------------------------------------------------- */
#define KM_NONE UINT32_MAX
#ifndef KM_CHUNK
#define KM_CHUNK 2048     /* frontier states a thread expands between two merges */
#endif
#define KM_MAX_THREADS 64

typedef struct km_search km_search;

/* One thread's part of a batch of the frontier, and what it found: every successor not in the
   visited set when the batch began, in order (the merge adds them). */
typedef struct {
    km_search *k;
    const uint8_t *states; /* its part of the batch */
    uint64_t n;            /* states in it; on a capacity error, those before the one that stopped */
    uint32_t open;         /* the invariants still open when the batch began */
    uint32_t *degree;      /* each state's successor count */
    km_succ *out;
    uint8_t *cand;         /* the candidates: state, fingerprint, the offset of the state expanded */
    uint64_t *fp;          /* in this part, its position among that state's successors, and the */
    uint32_t *from;        /* compiled invariants it violates (when any is open) */
    uint16_t *pos;
    uint32_t *mask;
    uint64_t nc, capc;
    uint32_t error;
    int nomem;
    uint64_t cpu_ns;       /* the CPU time of its part (CLOCK_THREAD_CPUTIME_ID) */
} km_worker;

struct km_search {
    km_visited seen;
    uint32_t *parent;    /* each state's parent index (KM_NONE: initial) */
    uint16_t *pos;       /* its position among the parent's successors: a trace is replayed */
    uint64_t n, cap;
    uint8_t *init;       /* the initial states, stored form: a replay starts there */
    uint64_t n_init;
    km_level level[2];   /* the frontier (level[cur]) and the next level */
    int cur;
    uint64_t spill;      /* bytes of the next level held in memory before it spills (0: never) */
    char *spill_dir;
    uint8_t *room;       /* a batch read back from a spilled level */
    int threads;
    km_worker workers[KM_MAX_THREADS];
    uint32_t *degree;    /* a batch's successor counts */
    int keep;            /* every state whole as well, in discovery order (km_get_states) */
    uint8_t *states;
    uint64_t kept_cap;
    uint64_t level_start, level_end; /* the frontier's indices: [level_start, level_end) */
    uint64_t generated;
    int64_t found[KM_INVARIANTS > 0 ? KM_INVARIANTS : 1];
    uint32_t checked;    /* the invariants asked for */
    int check_deadlock, symmetry;
    int64_t deadlock;
    uint64_t degrees[KM_MAX_SUCC + 1];
    int reduce;          /* --reduce dead: km_reduce before km_canonical (KM_HAS_REDUCE) */
    uint32_t error;      /* the kernel's capacity code that stopped the search, 0: none */
    uint64_t parallel_ns; /* the CPU time of the threads' parts, summed: the rest is serial */
};

_Static_assert(KM_MAX_SUCC < 65536, "a successor's position is 16 bits (km_search.pos)");

/* The form the search stores of a successor or an initial state. */
static void km_store_form(const km_search *k, km_state *t) {
#ifdef KM_HAS_REDUCE
    if (k->reduce) km_reduce(t);
#endif
    if (k->symmetry) km_canonical(t);
}

static uint32_t km_open(const km_search *k) {
    uint32_t open = 0;
    for (int i = 0; i < KM_INVARIANTS; i++)
        if (k->found[i] < 0 && (k->checked >> i & 1)) open |= 1u << i;
    return open;
}

/* Add a state the visited set did not hold: its index, -2 out of memory, -4 a spill failed. */
static int64_t km_record(km_search *k, km_level *level, const uint8_t *p, uint32_t parent,
                         uint16_t pos, uint32_t mask) {
    if (k->n >= UINT32_MAX - 1) return -2;
    if (k->n == k->cap) {
        uint64_t cap = k->cap + k->cap / 2;
        uint32_t *parents = realloc(k->parent, cap * sizeof(uint32_t));
        if (!parents) return -2;
        k->parent = parents;
        uint16_t *positions = realloc(k->pos, cap * sizeof(uint16_t));
        if (!positions) return -2;
        k->pos = positions;
        k->cap = cap;
    }
    if (k->keep) {
        if (k->n == k->kept_cap) {
            uint64_t cap = k->kept_cap ? k->kept_cap * 2 : 1024;
            uint8_t *states = realloc(k->states, cap * KM_BYTES);
            if (!states) return -2;
            k->states = states;
            k->kept_cap = cap;
        }
        memcpy(k->states + k->n * KM_BYTES, p, KM_BYTES);
    }
    int status = km_level_push(level, p, k->spill, k->spill_dir);
    if (status) return status;
    uint64_t index = k->n++;
    k->parent[index] = parent;
    k->pos[index] = pos;
    uint32_t bad = mask ? mask & km_open(k) : 0;
    for (int i = 0; i < KM_INVARIANTS; i++)
        if (bad >> i & 1) k->found[i] = (int64_t)index;
    return (int64_t)index;
}

static int km_worker_grow(km_worker *w) {
    uint64_t cap = w->capc ? w->capc * 2 : 4096;
    uint8_t *cand = realloc(w->cand, cap * KM_BYTES);
    if (cand) w->cand = cand;
    uint64_t *fp = realloc(w->fp, cap * sizeof(uint64_t));
    if (fp) w->fp = fp;
    uint32_t *from = realloc(w->from, cap * sizeof(uint32_t));
    if (from) w->from = from;
    uint16_t *pos = realloc(w->pos, cap * sizeof(uint16_t));
    if (pos) w->pos = pos;
    uint32_t *mask = realloc(w->mask, cap * sizeof(uint32_t));
    if (mask) w->mask = mask;
    if (!cand || !fp || !from || !pos || !mask) return -1;
    w->capc = cap;
    return 0;
}

/* Keep the candidate `t` (fingerprint `fp`), successor `j` of the part's state `i`, in the part's
   buffers: 0, or -1 when they cannot grow. */
static inline int km_keep(km_worker *w, const km_state *t, uint64_t fp, uint64_t i, uint32_t j) {
    if (w->nc == w->capc && km_worker_grow(w)) return -1;
    memcpy(w->cand + w->nc * KM_BYTES, t, KM_BYTES);
    w->fp[w->nc] = fp;
    w->from[w->nc] = (uint32_t)i;
    w->pos[w->nc] = (uint16_t)j;
    w->nc++;
    return 0;
}

/* A thread's part of a batch: successors, their stored form, fingerprints and (while an invariant
   is open) violation masks. It reads the visited set and writes only its own buffers. */
static void km_work_part(km_worker *w) {
    const km_search *k = w->k;
    km_succ *out = w->out;
    w->nc = 0;
    w->error = 0;
    w->nomem = 0;
    for (uint64_t i = 0; i < w->n; i++) {
        km_state s;
        memcpy(&s, w->states + i * KM_BYTES, KM_BYTES);
        out->n = 0;
        out->error = 0;
        km_successors(&s, out);
        if (out->error) { w->error = out->error; w->n = i; return; }
        w->degree[i] = out->n;
        for (uint32_t j = 0; j < out->n; j++) {
            km_state *t = &out->st[j];
            km_store_form(k, t);
            uint64_t fp = km_hash((const uint8_t *)t);
            if (km_visited_has(&k->seen, fp)) continue;
            if (km_keep(w, t, fp, i, j)) { w->nomem = 1; return; }
            w->mask[w->nc - 1] = w->open ? km_violations(t) : 0;
        }
    }
}

static uint64_t km_thread_cpu_ns(void) {
    struct timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) ? 0
           : (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *km_work(void *arg) {
    km_worker *w = arg;
    uint64_t start = km_thread_cpu_ns();
    km_work_part(w);
    w->cpu_ns = km_thread_cpu_ns() - start;
    return NULL;
}

/* A thread's findings added in order: -2 out of memory, -3 a capacity error, -4 a spill failed. */
static int km_merge(km_search *k, km_worker *w, uint64_t first) {
    k->parallel_ns += w->cpu_ns;
    if (w->nomem) return -2;
    for (uint64_t i = 0; i < w->n; i++) {
        uint32_t n = w->degree[i];
        k->generated += n;
        k->degrees[n]++;
        if (n == 0 && k->check_deadlock && k->deadlock < 0) k->deadlock = (int64_t)(first + i);
    }
    for (uint64_t c = 0; c < w->nc; c++) {
        int added = km_visited_add(&k->seen, w->fp[c]);
        if (added == -2) return -2;
        if (!added) continue;
        int64_t status = km_record(k, &k->level[!k->cur], w->cand + c * KM_BYTES,
                                   (uint32_t)(first + w->from[c]), w->pos[c], w->mask[c]);
        if (status < 0) return (int)status;
    }
    if (w->error) { k->error = w->error; return -3; }
    return 0;
}

/* -- the interface checker/kernel.py loads with ctypes ------------------------------------------ */
uint64_t km_state_bytes(void) { return KM_BYTES; }
uint64_t km_max_successors(void) { return KM_MAX_SUCC; }
uint64_t km_invariant_count(void) { return KM_INVARIANTS; }
/* the run-time constants' names in order, each followed by a space (checker/kernel.py checks its config against it) */
const char *km_config_names(void) { return "" KM_CONFIG(KM_CONFIG_NAME); }

void km_free(km_search *k) {
    if (!k) return;
    free(k->seen.slots); free(k->parent); free(k->pos); free(k->init); free(k->states);
    km_level_free(&k->level[0]); km_level_free(&k->level[1]);
    free(k->spill_dir); free(k->room); free(k->degree);
    for (int t = 0; t < KM_MAX_THREADS; t++) {
        km_worker *w = &k->workers[t];
        free(w->out); free(w->cand); free(w->fp); free(w->from); free(w->pos); free(w->mask);
    }
    free(k);
}

/* A search that keeps every state whole as well (km_get_states) until km_set_keep(k, 0), with one
   thread and no spill until km_set_threads and km_set_spill. */
km_search *km_new(uint32_t checked, int check_deadlock, int symmetry) {
    km_search *k = calloc(1, sizeof(km_search));
    if (!k) return NULL;
    k->cap = 1024;
    k->parent = malloc(k->cap * sizeof(uint32_t));
    k->pos = malloc(k->cap * sizeof(uint16_t));
    k->seen.mask = 4095;
    k->seen.slots = calloc(k->seen.mask + 1, sizeof(uint64_t));
    k->workers[0].out = malloc(sizeof(km_succ));
    k->degree = malloc(KM_CHUNK * sizeof(uint32_t));
    if (!k->parent || !k->pos || !k->seen.slots || !k->workers[0].out || !k->degree) {
        km_free(k);
        return NULL;
    }
    for (int i = 0; i < KM_INVARIANTS; i++) k->found[i] = -1;
    k->checked = checked;
    k->check_deadlock = check_deadlock;
    k->symmetry = symmetry;
    k->deadlock = -1;
    k->threads = 1;
    k->keep = 1;
    return k;
}

/* Keep every state whole (1, the default) or not: 1, or 0 once a state is in (too late). */
int km_set_keep(km_search *k, int on) {
    if (k->n) return 0;
    k->keep = on;
    return 1;
}

/* Expand with this many threads (1 .. KM_MAX_THREADS): 1, or 0 out of memory or range. */
int km_set_threads(km_search *k, int threads) {
    if (threads < 1 || threads > KM_MAX_THREADS) return 0;
    uint32_t *degree = realloc(k->degree, (uint64_t)threads * KM_CHUNK * sizeof(uint32_t));
    if (!degree) return 0;
    k->degree = degree;
    for (int t = 0; t < threads; t++)
        if (!k->workers[t].out && !(k->workers[t].out = malloc(sizeof(km_succ)))) return 0;
    k->threads = threads;
    return 1;
}

/* Past `bytes` of states, the next level goes on to an unlinked file in `dir`: 1, or 0 out of
   memory. */
int km_set_spill(km_search *k, const char *dir, uint64_t bytes) {
    free(k->spill_dir);
    k->spill_dir = strdup(dir);
    k->spill = bytes;
    return k->spill_dir != NULL;
}

/* An initial state (from the readable model, packed): its index, -1 if a duplicate, -2 out of memory.
   The frontier is then every state added. */
int64_t km_add_initial(km_search *k, const uint8_t *packed) {
    km_state t;
    memcpy(&t, packed, KM_BYTES);
    km_store_form(k, &t);
    int added = km_visited_add(&k->seen, km_hash((const uint8_t *)&t));
    if (added <= 0) return added == 0 ? -1 : -2;
    uint8_t *init = realloc(k->init, (k->n_init + 1) * KM_BYTES);
    if (!init) return -2;
    k->init = init;
    memcpy(k->init + k->n_init++ * KM_BYTES, &t, KM_BYTES);
    /* the initial states are the first level, the frontier */
    int64_t index = km_record(k, &k->level[k->cur], (const uint8_t *)&t, KM_NONE, 0,
                              km_violations(&t));
    if (index < 0) return -2;
    k->level_start = 0;
    k->level_end = k->n;
    return index;
}

/* Expand the frontier into the next level, `threads` batches' parts at a time, merged in the
   frontier's order: 0, or -2 out of memory, -3 a capacity error (km_error), -4 the next level could
   not be spilled or read back (the level is then incomplete). */
int km_expand_level(km_search *k) {
    km_level *now = &k->level[k->cur];
    int status = km_level_seal(now);
    if (status) return status;
    uint64_t total = km_level_size(now), base = k->level_start;
    uint64_t batch = (uint64_t)k->threads * KM_CHUNK;
    if (now->n_file && !k->room && !(k->room = malloc(batch * KM_BYTES))) return -2;
    for (uint64_t at = 0; at < total; at += batch) {
        uint64_t n = total - at < batch ? total - at : batch;
        const uint8_t *states = km_level_read(now, at, n, k->room);
        if (!states) return -4;
        int parts = k->threads;
        uint64_t each = (n + (uint64_t)parts - 1) / (uint64_t)parts;
        uint32_t open = km_open(k);
        pthread_t ids[KM_MAX_THREADS];
        int started[KM_MAX_THREADS] = {0};
        for (int t = 0; t < parts; t++) {
            km_worker *w = &k->workers[t];
            uint64_t lo = (uint64_t)t * each < n ? (uint64_t)t * each : n;
            uint64_t hi = lo + each < n ? lo + each : n;
            w->k = k;
            w->states = states + lo * KM_BYTES;
            w->n = hi - lo;
            w->open = open;
            w->degree = k->degree + lo;
            if (t > 0 && w->n && pthread_create(&ids[t], NULL, km_work, w) == 0) started[t] = 1;
        }
        for (int t = 0; t < parts; t++)  /* the first part here, and any a thread was refused */
            if (!started[t]) km_work(&k->workers[t]);
        for (int t = 1; t < parts; t++)
            if (started[t]) pthread_join(ids[t], NULL);
        for (int t = 0; t < parts; t++) {
            uint64_t lo = (uint64_t)t * each < n ? (uint64_t)t * each : n;
            if ((status = km_merge(k, &k->workers[t], base + at + lo))) return status;
        }
    }
    if ((status = km_level_clear(now))) return status;
    k->cur = !k->cur;
    k->level_start = k->level_end;
    k->level_end = k->n;
    return 0;
}

/* distinct, generated, level_start, level_end, deadlock, bytes held */
void km_counts(const km_search *k, int64_t *out) {
    out[0] = (int64_t)k->n;
    out[1] = (int64_t)k->generated;
    out[2] = (int64_t)k->level_start;
    out[3] = (int64_t)k->level_end;
    out[4] = k->deadlock;
    const km_level *a = &k->level[0], *b = &k->level[1];
    out[5] = (int64_t)((k->seen.mask + 1) * 8 + k->cap * 6 + (a->cap + b->cap) * KM_BYTES
                       + k->kept_cap * KM_BYTES);
}

/* The bytes held: the visited set, the links (parent, position), the frontier's two levels in
   memory, the states kept whole; and the bytes written to the frontier's files so far. */
void km_memory(const km_search *k, uint64_t *out) {
    out[0] = (k->seen.mask + 1) * sizeof(uint64_t);
    out[1] = k->cap * (sizeof(uint32_t) + sizeof(uint16_t));
    out[2] = (k->level[0].cap + k->level[1].cap) * KM_BYTES;
    out[3] = k->kept_cap * KM_BYTES;
    out[4] = (k->level[0].written + k->level[1].written) * KM_BYTES;
}

void km_found(const km_search *k, int64_t *out) {
    for (int i = 0; i < KM_INVARIANTS; i++) out[i] = k->found[i];
}

void km_degrees(const km_search *k, uint64_t *out) {
    memcpy(out, k->degrees, sizeof(k->degrees));
}

/* The path from an initial state to state `index`, replayed on the kernel from the initial state
   by each state's position among its parent's successors: its length (states), the states in order
   (stored form) and the action code of each step (actions[i] reaches state i + 1). -1 if longer than
   `room`; -2 if a step leaves the visited set (a replay that is not the search's: a bug). */
int64_t km_replay(const km_search *k, int64_t index, uint8_t *states, uint32_t *actions,
                  int64_t room) {
    int64_t len = 1;
    for (uint64_t i = (uint64_t)index; k->parent[i] != KM_NONE; i = k->parent[i])
        if (++len > room) return -1;
    uint64_t *chain = malloc((uint64_t)len * sizeof(uint64_t));
    km_succ *out = malloc(sizeof(km_succ));
    if (!chain || !out) { free(chain); free(out); return -2; }
    uint64_t i = (uint64_t)index;
    for (int64_t step = len - 1; step >= 0; step--) {
        chain[step] = i;
        if (step) i = k->parent[i];
    }
    int64_t result = len;
    km_state s;
    if (chain[0] >= k->n_init) result = -2;
    else memcpy(&s, k->init + chain[0] * KM_BYTES, KM_BYTES);
    for (int64_t step = 0; result > 0 && step < len; step++) {
        if (step) {
            out->n = 0;
            out->error = 0;
            km_successors(&s, out);
            uint16_t p = k->pos[chain[step]];
            if (out->error || p >= out->n) { result = -2; break; }
            s = out->st[p];
            km_store_form(k, &s);
            actions[step - 1] = out->act[p];
        }
        if (!km_visited_has(&k->seen, km_hash((const uint8_t *)&s))) { result = -2; break; }
        memcpy(states + step * KM_BYTES, &s, KM_BYTES);
    }
    free(chain);
    free(out);
    return result;
}

/* The CPU seconds the threads spent in their parts (the search's parallel share). */
double km_parallel_seconds(const km_search *k) { return (double)k->parallel_ns / 1e9; }

static int km_compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* a sorted in place: a radix sort by 16 bits in 4 passes (qsort if its buffers cannot be had) */
static void km_sort(uint64_t *a, uint64_t n) {
    uint64_t *b = malloc((n ? n : 1) * sizeof(uint64_t)), *count = malloc(65536 * sizeof(uint64_t));
    if (!b || !count) {
        free(b); free(count);
        qsort(a, n, sizeof(uint64_t), km_compare);
        return;
    }
    uint64_t *src = a, *dst = b;
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof(uint64_t));
        for (uint64_t i = 0; i < n; i++) count[src[i] >> shift & 0xFFFF]++;
        for (uint64_t d = 0, at = 0; d < 65536; d++) {
            uint64_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (uint64_t i = 0; i < n; i++) dst[count[src[i] >> shift & 0xFFFF]++] = src[i];
        uint64_t *t = src; src = dst; dst = t;
    }
    free(b); /* four passes: the sorted values are back in a */
    free(count);
}

/* TLC's observed estimate: the smallest distance between two fingerprints of the visited set (0 if
   it holds fewer than two). It sorts the set in place and frees the frontier: the search is over
   (no replay after it). */
uint64_t km_smallest_gap(km_search *k) {
    for (int i = 0; i < 2; i++) {
        km_level_free(&k->level[i]);
        memset(&k->level[i], 0, sizeof(km_level));
    }
    uint64_t *fps = k->seen.slots, n = 0;
    for (uint64_t i = 0; i <= k->seen.mask; i++)  /* moved down, over slots already read */
        if (fps[i]) fps[n++] = fps[i];
    if (k->seen.has_zero) fps[n++] = 0;  /* the set is at most 3/4 full: there is room */
    km_sort(fps, n);
    uint64_t smallest = 0;
    for (uint64_t i = 1; i < n; i++)
        if (!smallest || fps[i] - fps[i - 1] < smallest) smallest = fps[i] - fps[i - 1];
    k->seen.n = 0;
    memset(fps, 0, (k->seen.mask + 1) * sizeof(uint64_t));
    return smallest;
}

/* -- one state at a time, for the equivalence tests ---------------------------------------------- */
uint32_t km_successors_of(const uint8_t *packed, uint32_t *actions, uint8_t *states) {
    km_succ *out = malloc(sizeof(km_succ));
    if (!out) return UINT32_MAX;
    km_state s;
    memcpy(&s, packed, KM_BYTES);
    out->n = 0;
    out->error = 0;
    km_successors(&s, out);
    uint32_t n = out->error ? UINT32_MAX - out->error : out->n;
    if (out->error) { free(out); return n; }
    memcpy(actions, out->act, n * sizeof(uint32_t));
    memcpy(states, out->st, n * KM_BYTES);
    free(out);
    return n;
}

uint32_t km_violations_of(const uint8_t *packed) {
    km_state s;
    memcpy(&s, packed, KM_BYTES);
    return km_violations(&s);
}

void km_canonical_of(uint8_t *packed) {
    km_state s;
    memcpy(&s, packed, KM_BYTES);
    km_canonical(&s);
    memcpy(packed, &s, KM_BYTES);
}

/* -- a batch at a time, from any process (the Spark executors: checker/kernel_batch.py) ------------
   A state's fingerprint is km_hash of its packed bytes (in the canonical form under --symmetry); a set
   of fingerprints (km_fpset) keeps an expansion's first occurrences across its batches. */

typedef struct {
    uint64_t *slots; /* open addressing: 0 empty; the fingerprint 0 is held apart (has_zero) */
    uint64_t mask, n;
    int has_zero;
} km_fpset;

void km_fpset_free(km_fpset *set) {
    if (!set) return;
    free(set->slots);
    free(set);
}

km_fpset *km_fpset_new(void) {
    km_fpset *set = calloc(1, sizeof(km_fpset));
    if (!set) return NULL;
    set->mask = 4095;
    set->slots = calloc(set->mask + 1, sizeof(uint64_t));
    if (!set->slots) { free(set); return NULL; }
    return set;
}

static int km_fpset_grow(km_fpset *set) {
    uint64_t cap = (set->mask + 1) * 2;
    uint64_t *slots = calloc(cap, sizeof(uint64_t));
    if (!slots) return -1;
    for (uint64_t i = 0; i <= set->mask; i++) {
        uint64_t fp = set->slots[i];
        if (!fp) continue;
        uint64_t h = (fp ^ fp >> 29) & (cap - 1);
        while (slots[h]) h = (h + 1) & (cap - 1);
        slots[h] = fp;
    }
    free(set->slots);
    set->slots = slots;
    set->mask = cap - 1;
    return 0;
}

/* Add fp: 1 if it was new, 0 if the set held it, -2 out of memory. */
static int km_fpset_add(km_fpset *set, uint64_t fp) {
    if (fp == 0) {
        int was = set->has_zero;
        set->has_zero = 1;
        return !was;
    }
    uint64_t h = (fp ^ fp >> 29) & set->mask;
    while (set->slots[h]) {
        if (set->slots[h] == fp) return 0;
        h = (h + 1) & set->mask;
    }
    set->slots[h] = fp;
    set->n++;
    if (set->n * 2 > set->mask + 1 && km_fpset_grow(set)) return -2;
    return 1;
}

/* 1 when the set holds fp (a read: threads may share a set none of them adds to). */
static int km_fpset_has(const km_fpset *set, uint64_t fp) {
    if (fp == 0) return set->has_zero;
    uint64_t h = (fp ^ fp >> 29) & set->mask;
    while (set->slots[h]) {
        if (set->slots[h] == fp) return 1;
        h = (h + 1) & set->mask;
    }
    return 0;
}

/* For each of n fingerprints, out[i] = 1 when the set holds it, else 0. */
void km_fpset_has_many(const km_fpset *set, const uint64_t *fps, uint64_t n, uint8_t *out) {
    for (uint64_t i = 0; i < n; i++) out[i] = (uint8_t)km_fpset_has(set, fps[i]);
}

/* Add n fingerprints (the levels known visited): 0, or -2 out of memory. */
int km_fpset_add_many(km_fpset *set, const uint64_t *fps, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (km_fpset_add(set, fps[i]) == -2) return -2;
    return 0;
}

/* The fingerprints of n packed states (as they are: canonicalise first under --symmetry). */
void km_fingerprints(const uint8_t *states, uint64_t n, uint64_t *out) {
    for (uint64_t i = 0; i < n; i++) out[i] = km_hash(states + i * KM_BYTES);
}

/* The compiled invariants' violation masks of n packed states. */
void km_violations_batch(const uint8_t *states, uint64_t n, uint32_t *masks) {
    km_state s;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&s, states + i * KM_BYTES, KM_BYTES);
        masks[i] = km_violations(&s);
    }
}

/* The capacity code that stopped the last km_expand_batch (its -3), as km_error gives a search's. */
static uint32_t km_batch_error;
uint32_t km_batch_error_code(void) { return km_batch_error; }

/* Expand n packed states in order. For state i: masks[i] the compiled invariants it violates, degrees[i]
   its successor count. Its successors, in the readable model's order, canonical under `symmetry`, are
   written out in order (at most `cap`): the packed state, its fingerprint, the expanded state's offset i
   in this batch, its position among i's successors and the action code; with `seen`, only those whose
   fingerprint is not in it, each then added (an expansion's first occurrences, across its batches).
   `symmetry` is a set of flags: bit 0 --symmetry (km_canonical), bit 1 --reduce dead (km_reduce, before
   km_canonical, as km_expand_level applies them; -4 when the kernel does not compile it).
   Returns how many were written; -2 out of memory; -3 a state past the kernel's capacity
   (km_batch_error_code); -1 when `cap` is short (the caller passes at least
   n * KM_MAX_SUCC: on -1, `seen` holds fingerprints not written, and the batch is spoiled). */
int64_t km_expand_batch(const uint8_t *states, uint64_t n, int symmetry, km_fpset *seen, uint32_t *masks,
                        uint32_t *degrees, uint8_t *out_states, uint64_t *out_fps, uint32_t *out_parent,
                        uint32_t *out_pos, uint32_t *out_action, uint64_t cap) {
#ifndef KM_HAS_REDUCE
    if (symmetry & 2) return -4;
#endif
    km_succ *out = malloc(sizeof(km_succ));
    if (!out) return -2;
    uint64_t w = 0;
    km_state s;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&s, states + i * KM_BYTES, KM_BYTES);
        masks[i] = km_violations(&s);
        out->n = 0;
        out->error = 0;
        km_successors(&s, out);
        if (out->error) { km_batch_error = out->error; free(out); return -3; }
        degrees[i] = out->n;
        for (uint32_t j = 0; j < out->n; j++) {
            km_state *t = &out->st[j];
#ifdef KM_HAS_REDUCE
            if (symmetry & 2) km_reduce(t);
#endif
            if (symmetry & 1) km_canonical(t);
            uint64_t fp = km_hash((const uint8_t *)t);
            if (seen) {
                int added = km_fpset_add(seen, fp);
                if (added == -2) { free(out); return -2; }
                if (!added) continue;
            }
            if (w == cap) { free(out); return -1; }
            memcpy(out_states + w * KM_BYTES, t, KM_BYTES);
            out_fps[w] = fp;
            out_parent[w] = (uint32_t)i;
            out_pos[w] = j;
            out_action[w] = out->act[j];
            w++;
        }
    }
    free(out);
    return (int64_t)w;
}

/* -- a level of the Spark driver's search, as km_expand_level runs one --------------------------------------------
   The Spark driver keeps its visited set (a km_fpset: it moves to and from the executors) and its frontier (one row a
   state, by global index), and expands a level with km_driver_level the way the local engine's search expands one
   (km_expand_level): batches of `threads` x KM_CHUNK states, each thread's part of a batch against the visited set
   read only, then the parts merged in the frontier's order, each candidate's fingerprint added to the set once and,
   when new, its state copied once into the level's output. So the first time a fingerprint is made is its smallest
   key, the order a distributed level numbers (checker/spark/driver_level.py). */
typedef struct {
    km_worker w;             /* its candidates, successors buffer and part of the batch (km_work_part's) */
    const km_fpset *known;   /* the visited set, read only while the threads run */
    int flags;               /* bit 0 --symmetry, bit 1 --reduce dead, bit 2 the frontier's violation masks */
    uint32_t *masks;         /* its part's violation masks (bit 2) */
} __attribute__((aligned(128))) km_known_worker; /* no two threads' counters on one cache line */

typedef struct {
    km_known_worker workers[KM_MAX_THREADS]; /* kept from level to level, their buffers grown once */
    const uint8_t *pending;  /* a batch expanded but not merged for want of room: its first state */
    uint64_t pending_n;
} km_driver;

km_driver *km_driver_new(void) { return calloc(1, sizeof(km_driver)); }

void km_driver_free(km_driver *d) {
    if (!d) return;
    for (int t = 0; t < KM_MAX_THREADS; t++) {
        km_worker *w = &d->workers[t].w;
        free(w->out); free(w->cand); free(w->fp); free(w->from); free(w->pos); free(w->mask);
    }
    free(d);
}

/* A thread's part of a batch: km_work_part's, against a km_fpset, the frontier's masks when asked. */
static void km_known_part(km_known_worker *kw) {
    km_worker *w = &kw->w;
    km_succ *out = w->out;
    const km_fpset *known = kw->known;
    const int flags = kw->flags;
    w->nc = 0;
    w->error = 0;
    w->nomem = 0;
    for (uint64_t i = 0; i < w->n; i++) {
        km_state s;
        memcpy(&s, w->states + i * KM_BYTES, KM_BYTES);
        if (flags & 4) kw->masks[i] = km_violations(&s);
        out->n = 0;
        out->error = 0;
        km_successors(&s, out);
        if (out->error) { w->error = out->error; w->n = i; return; }
        w->degree[i] = out->n;
        for (uint32_t j = 0; j < out->n; j++) {
            km_state *t = &out->st[j];
#ifdef KM_HAS_REDUCE
            if (flags & 2) km_reduce(t);
#endif
            if (flags & 1) km_canonical(t);
            uint64_t fp = km_hash((const uint8_t *)t);
            if (km_fpset_has(known, fp)) continue;
            if (km_keep(w, t, fp, i, j)) { w->nomem = 1; return; }
        }
    }
}

static void *km_known_work(void *arg) {
    km_known_part(arg);
    return NULL;
}

/* A batch's parts merged in order into the output from row `written`: its new row count, -2 out of memory,
   -3 a capacity error (km_batch_error_code). The caller made room for every candidate. */
static int64_t km_known_merge(km_driver *d, int parts, uint64_t first, km_fpset *visited,
                              uint8_t *out_states, uint64_t *out_fps, uint32_t *out_parent, uint16_t *out_pos,
                              uint64_t written) {
    for (int t = 0; t < parts; t++) {
        km_worker *w = &d->workers[t].w;
        if (w->nomem) return -2;
        for (uint64_t c = 0; c < w->nc; c++) {
            int added = km_fpset_add(visited, w->fp[c]);
            if (added == -2) return -2;
            if (!added) continue;
            memcpy(out_states + written * KM_BYTES, w->cand + c * KM_BYTES, KM_BYTES);
            out_fps[written] = w->fp[c];
            out_parent[written] = (uint32_t)(first + (uint64_t)(w->states - d->workers[0].w.states) / KM_BYTES
                                             + w->from[c]);
            out_pos[written++] = w->pos[c];
        }
        if (w->error) { km_batch_error = w->error; return -3; }
    }
    return (int64_t)written;
}

/* A batch's parts expanded side by side, `threads` of them (km_expand_level's). */
static void km_known_batch(km_driver *d, const uint8_t *states, uint64_t batch, int flags, const km_fpset *visited,
                           int threads, uint32_t *masks, uint32_t *degrees) {
    uint64_t each = (batch + (uint64_t)threads - 1) / (uint64_t)threads;
    pthread_t ids[KM_MAX_THREADS];
    int started[KM_MAX_THREADS] = {0};
    for (int t = 0; t < threads; t++) {
        km_known_worker *kw = &d->workers[t];
        uint64_t lo = (uint64_t)t * each < batch ? (uint64_t)t * each : batch;
        uint64_t hi = lo + each < batch ? lo + each : batch;
        kw->known = visited;
        kw->flags = flags;
        kw->masks = masks + lo;
        kw->w.states = states + lo * KM_BYTES;
        kw->w.n = hi - lo;
        kw->w.degree = degrees + lo;
        if (t > 0 && kw->w.n && pthread_create(&ids[t], NULL, km_known_work, kw) == 0) started[t] = 1;
    }
    for (int t = 0; t < threads; t++)  /* the first part here, and any a thread was refused */
        if (!started[t]) km_known_part(&d->workers[t]);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(ids[t], NULL);
}

/* Expand the frontier `states` (n rows) into the next level: each new state's row, fingerprint (added to
   `visited`), its parent's row in the frontier and its position among the parent's successors, in the order a
   distributed level numbers them; degrees[i] each frontier state's successor count, masks[i] its violation mask
   (flags bit 2; flags as km_expand_batch's `symmetry`, bit 2 added). io[0] the frontier rows done, io[1] the rows
   written, io[2] the output's capacity, io[3] set to the rows a batch needs when it stops for room: 0 the level
   done; -1 the output is short (grow it past io[1] + io[3] and call again with the same frontier and io: the
   batch expanded is merged then, not expanded again; io[3] is 0 on a level's first call); -2 out of memory; -3 a state past the kernel's capacity
   (km_batch_error_code); -4 --reduce dead not compiled. */
int km_driver_level(km_driver *d, const uint8_t *states, uint64_t n, int flags, km_fpset *visited, int threads,
                    uint32_t *masks, uint32_t *degrees, uint8_t *out_states, uint64_t *out_fps,
                    uint32_t *out_parent, uint16_t *out_pos, uint64_t *io) {
#ifndef KM_HAS_REDUCE
    if (flags & 2) return -4;
#endif
    if (threads < 1) threads = 1;
    if (threads > KM_MAX_THREADS) threads = KM_MAX_THREADS;
    for (int t = 0; t < threads; t++)
        if (!d->workers[t].w.out && !(d->workers[t].w.out = malloc(sizeof(km_succ)))) return -2;
    for (uint64_t at = io[0]; at < n; at = io[0]) {
        uint64_t batch = n - at < (uint64_t)threads * KM_CHUNK ? n - at : (uint64_t)threads * KM_CHUNK;
        if (io[3] && d->pending == states + at * KM_BYTES && d->pending_n == batch) {
            d->pending = NULL;  /* expanded by the call that stopped for room */
            io[3] = 0;
        } else {
            km_known_batch(d, states + at * KM_BYTES, batch, flags, visited, threads, masks + at, degrees + at);
        }
        uint64_t need = 0;
        for (int t = 0; t < threads; t++) need += d->workers[t].w.nc;
        if (io[1] + need > io[2]) {
            d->pending = states + at * KM_BYTES;
            d->pending_n = batch;
            io[3] = need;
            return -1;
        }
        int64_t written = km_known_merge(d, threads, at, visited, out_states, out_fps, out_parent, out_pos, io[1]);
        if (written < 0) return (int)written;
        io[1] = (uint64_t)written;
        io[0] = at + batch;
    }
    return 0;
}

/* States [start, start + n) of a search, packed, in discovery order (the prefix a Spark run moves over). */
void km_get_states(const km_search *k, uint64_t start, uint64_t n, uint8_t *out) {
    memcpy(out, k->states + start * KM_BYTES, n * KM_BYTES);
}

/* -- the optional hooks (additive: a kernel without them answers as one that has none) ---------------------- */
/* --reduce dead on this search: 1 if the kernel compiles it (or it is asked off), 0 if not */
int km_set_reduce(km_search *k, int on) {
#ifdef KM_HAS_REDUCE
    k->reduce = on;
    return 1;
#else
    (void)k;
    return !on;
#endif
}

/* the capacity code that stopped the search (0: none) */
uint32_t km_error(const km_search *k) { return k->error; }

/* km_reduce of one state, in place (the equivalence tests); a kernel without it leaves the state alone */
void km_reduce_of(uint8_t *packed) {
#ifdef KM_HAS_REDUCE
    km_state s;
    memcpy(&s, packed, KM_BYTES);
    km_reduce(&s);
    memcpy(packed, &s, KM_BYTES);
#else
    (void)packed;
#endif
}
