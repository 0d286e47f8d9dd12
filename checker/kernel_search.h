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
     KM_HAS_REDUCE, km_reduce(s) s in place in the form --reduce dead stores (spec.model.KernelSource.reductions),
                                 applied before km_canonical, to every successor and initial state
   A kernel that meets a state past its fixed capacity sets out->error (nonzero: its own code) in km_successors;
   the level stops and km_expand_level returns -3 (km_error gives the code): never a silently different search.
   This file gives the search, level by level as checker/bfs.py runs it: a hash set of whole packed
   states (no fingerprint: two distinct states never merge), the states in discovery order (a level is
   a range of them: the frontier), each state's parent index and action code (a counterexample is
   rebuilt from them), the first violation of each invariant, the first deadlock, and the out-degree
   histogram. Python drives it a level at a time (budgets, progress, traces: checker/kernel.py). */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KM_BYTES (sizeof(km_state))

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

typedef struct {
    uint8_t *states;     /* n states of KM_BYTES, in discovery order */
    uint32_t *parent;    /* parent index of each state (UINT32_MAX: initial) */
    uint32_t *action;    /* action code that reached it */
    uint64_t n, cap;
    uint32_t *slots;     /* open addressing: 0 empty, else index + 1 */
    uint64_t mask;
    uint64_t level_start, level_end; /* the frontier: states [level_start, level_end) */
    uint64_t generated;
    int64_t found[KM_INVARIANTS > 0 ? KM_INVARIANTS : 1];
    uint32_t checked;    /* the invariants asked for */
    int check_deadlock, symmetry;
    int64_t deadlock;
    uint64_t degrees[KM_MAX_SUCC + 1];
    km_succ *buf;
    int reduce;          /* --reduce dead: km_reduce before km_canonical (KM_HAS_REDUCE) */
    uint32_t error;      /* the kernel's capacity code that stopped the search, 0: none */
} km_search;

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

static int km_grow_table(km_search *k) {
    uint64_t cap = (k->mask + 1) * 2;
    uint32_t *slots = calloc(cap, sizeof(uint32_t));
    if (!slots) return -1;
    for (uint64_t i = 0; i < k->n; i++) {
        uint64_t h = km_hash(k->states + i * KM_BYTES) & (cap - 1);
        while (slots[h]) h = (h + 1) & (cap - 1);
        slots[h] = (uint32_t)(i + 1);
    }
    free(k->slots);
    k->slots = slots;
    k->mask = cap - 1;
    return 0;
}

static int km_grow_states(km_search *k) {
    uint64_t cap = k->cap * 2;
    uint8_t *states = realloc(k->states, cap * KM_BYTES);
    if (!states) return -1;
    k->states = states;
    uint32_t *parent = realloc(k->parent, cap * sizeof(uint32_t));
    if (!parent) return -1;
    k->parent = parent;
    uint32_t *action = realloc(k->action, cap * sizeof(uint32_t));
    if (!action) return -1;
    k->action = action;
    k->cap = cap;
    return 0;
}

/* Insert t if it is new: its index, -1 if it was found already, -2 out of memory. */
static int64_t km_insert(km_search *k, const km_state *t, uint32_t parent, uint32_t action) {
    const uint8_t *p = (const uint8_t *)t;
    uint64_t h = km_hash(p) & k->mask;
    for (;;) {
        uint32_t slot = k->slots[h];
        if (!slot) break;
        if (memcmp(k->states + (uint64_t)(slot - 1) * KM_BYTES, p, KM_BYTES) == 0) return -1;
        h = (h + 1) & k->mask;
    }
    if (k->n >= UINT32_MAX - 1) return -2;
    if (k->n == k->cap && km_grow_states(k)) return -2;
    uint64_t index = k->n++;
    memcpy(k->states + index * KM_BYTES, p, KM_BYTES);
    k->parent[index] = parent;
    k->action[index] = action;
    k->slots[h] = (uint32_t)(index + 1);
    if (k->n * 2 > k->mask + 1 && km_grow_table(k)) return -2;
    uint32_t open = 0;
    for (int i = 0; i < KM_INVARIANTS; i++)
        if (k->found[i] < 0 && (k->checked >> i & 1)) open |= 1u << i;
    if (open) {
        uint32_t bad = km_violations(t) & open;
        for (int i = 0; i < KM_INVARIANTS; i++)
            if (bad >> i & 1) k->found[i] = (int64_t)index;
    }
    return (int64_t)index;
}

/* -- the interface checker/kernel.py loads with ctypes ------------------------------------------ */
uint64_t km_state_bytes(void) { return KM_BYTES; }
uint64_t km_max_successors(void) { return KM_MAX_SUCC; }
uint64_t km_invariant_count(void) { return KM_INVARIANTS; }

void km_free(km_search *k) {
    if (!k) return;
    free(k->states); free(k->parent); free(k->action); free(k->slots); free(k->buf);
    free(k);
}

km_search *km_new(uint32_t checked, int check_deadlock, int symmetry) {
    km_search *k = calloc(1, sizeof(km_search));
    if (!k) return NULL;
    k->cap = 1024;
    k->states = malloc(k->cap * KM_BYTES);
    k->parent = malloc(k->cap * sizeof(uint32_t));
    k->action = malloc(k->cap * sizeof(uint32_t));
    k->mask = 4095;
    k->slots = calloc(k->mask + 1, sizeof(uint32_t));
    k->buf = malloc(sizeof(km_succ));
    if (!k->states || !k->parent || !k->action || !k->slots || !k->buf) { km_free(k); return NULL; }
    for (int i = 0; i < KM_INVARIANTS; i++) k->found[i] = -1;
    k->checked = checked;
    k->check_deadlock = check_deadlock;
    k->symmetry = symmetry;
    k->deadlock = -1;
    return k;
}

/* An initial state (from the readable model, packed): its index, -1 if a duplicate, -2 out of memory.
   The frontier is then every state added. */
int64_t km_add_initial(km_search *k, const uint8_t *packed) {
    km_state t;
    memcpy(&t, packed, KM_BYTES);
#ifdef KM_HAS_REDUCE
    if (k->reduce) km_reduce(&t);
#endif
    if (k->symmetry) km_canonical(&t);
    int64_t index = km_insert(k, &t, UINT32_MAX, UINT32_MAX);
    k->level_start = 0;
    k->level_end = k->n;
    return index;
}

/* Expand the frontier into the next level: 0, or -2 out of memory (the level is then incomplete). */
int km_expand_level(km_search *k) {
    km_succ *out = k->buf;
    uint64_t end = k->level_end;
    for (uint64_t i = k->level_start; i < end; i++) {
        km_state s;
        memcpy(&s, k->states + i * KM_BYTES, KM_BYTES);
        out->n = 0;
        out->error = 0;
        km_successors(&s, out);
        if (out->error) { k->error = out->error; return -3; }
        uint32_t n = out->n;
        k->generated += n;
        k->degrees[n]++;
        if (n == 0 && k->check_deadlock && k->deadlock < 0) k->deadlock = (int64_t)i;
        for (uint32_t j = 0; j < n; j++) {
            km_state *t = &out->st[j];
#ifdef KM_HAS_REDUCE
            if (k->reduce) km_reduce(t);
#endif
            if (k->symmetry) km_canonical(t);
            if (km_insert(k, t, (uint32_t)i, out->act[j]) == -2) return -2;
        }
    }
    k->level_start = end;
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
    out[5] = (int64_t)(k->cap * (KM_BYTES + 8) + (k->mask + 1) * 4);
}

void km_found(const km_search *k, int64_t *out) {
    for (int i = 0; i < KM_INVARIANTS; i++) out[i] = k->found[i];
}

void km_degrees(const km_search *k, uint64_t *out) {
    memcpy(out, k->degrees, sizeof(k->degrees));
}

/* The path from an initial state to state `index`, last first: its length (states), each state's index
   and the action code that reached it. */
int64_t km_path(const km_search *k, int64_t index, int64_t *indices, uint32_t *actions, int64_t room) {
    int64_t len = 0;
    uint64_t i = (uint64_t)index;
    while (len < room) {
        indices[len] = (int64_t)i;
        actions[len] = k->action[i];
        len++;
        if (k->parent[i] == UINT32_MAX) break;
        i = k->parent[i];
    }
    return len;
}

void km_get_state(const km_search *k, int64_t index, uint8_t *out) {
    memcpy(out, k->states + (uint64_t)index * KM_BYTES, KM_BYTES);
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
