/* The compiled successor kernel of two-phase commit: spec/two_phase.py (TwoPhase.successors) in C.

   The readable model is the reference: a rule changes there first, then here, and the equivalence
   tests (tests/test_kernel.py) show the two agree. Each rule below names the readable rule it follows;
   the successors come in the readable model's order (traces are rebuilt by replaying it).

   Compile-time constants (checker/kernel.py passes them from spec/two_phase_kernel.py):
     KM_RM            the number of resource managers (RM)
     KM_COMMIT_GUARD  1: TMCommit waits for every RM to be prepared (the constant commit_guard)
     KM_MUTANT        1: a deliberate change (TMRcvPrepared without its tmState = "init" guard), which the
                      equivalence test must catch

   Packing (spec/two_phase_kernel.py packs and unpacks): rm[i] = rmState[i] << 2 | tmPrepared[i] << 1 |
   msgPrepared[i], so sorting rm[] sorts the RMs by (rmState, in tmPrepared, Prepared sent): exactly
   TwoPhase.canonical. */

#include <stdint.h>

#ifndef KM_MUTANT
#define KM_MUTANT 0
#endif

enum { WORKING = 0, PREPARED = 1, COMMITTED = 2, ABORTED = 3 };
enum { TM_INIT = 0, TM_DONE = 1 };
/* action kinds: the action code is kind << 8 | rm (rm = 1 .. RM, 0 for the TM's own actions) */
enum { TM_COMMIT, TM_ABORT, TM_RCV_PREPARED, RM_PREPARE, RM_CHOOSE_TO_ABORT, RM_RCV_COMMIT_MSG,
       RM_RCV_ABORT_MSG };

typedef struct {
    uint8_t rm[KM_RM];  /* rmState << 2 | tmPrepared << 1 | msgPrepared */
    uint8_t tm_state;
    uint8_t msg_commit;
    uint8_t msg_abort;
} km_state;

#define KM_MAX_SUCC (2 + 5 * KM_RM)
#define KM_INVARIANTS 1 /* bit 0: TCConsistent */

#define RM_STATE(b) ((b) >> 2)
#define TM_PREPARED 2u
#define MSG_PREPARED 1u
#define WITH_RM_STATE(b, v) ((uint8_t)(((b) & 3u) | (v) << 2))

#include "kernel_search.h" /* checker/kernel_search.h: km_succ, km_emit and the search */

#define EMIT(kind, rm) km_emit(out, s, (uint32_t)(kind) << 8 | (uint32_t)(rm))

static void km_successors(const km_state *s, km_succ *out) {
    km_state *t;
    int tm_init = s->tm_state == TM_INIT;
    if (tm_init) {
        /* TMCommit: tmState = "init", tmPrepared = RM (unless commit_guard is off) */
        int all_prepared = 1;
        for (int i = 0; i < KM_RM; i++) all_prepared &= (s->rm[i] & TM_PREPARED) != 0;
        if (!KM_COMMIT_GUARD || all_prepared) {
            t = EMIT(TM_COMMIT, 0);
            t->tm_state = TM_DONE;
            t->msg_commit = 1;
        }
        /* TMAbort: tmState = "init" */
        t = EMIT(TM_ABORT, 0);
        t->tm_state = TM_DONE;
        t->msg_abort = 1;
    }
    for (int i = 0; i < KM_RM; i++) {
        uint8_t r = s->rm[i];
        /* TMRcvPrepared(r): tmState = "init", [type |-> "Prepared", rm |-> r] \in msgs */
        if ((tm_init || KM_MUTANT) && (r & MSG_PREPARED)) {
            t = EMIT(TM_RCV_PREPARED, i + 1);
            t->rm[i] = r | TM_PREPARED;
        }
        if (RM_STATE(r) == WORKING) {
            /* RMPrepare(r): rmState[r] = "working" */
            t = EMIT(RM_PREPARE, i + 1);
            t->rm[i] = WITH_RM_STATE(r, PREPARED) | MSG_PREPARED;
            /* RMChooseToAbort(r): rmState[r] = "working" */
            t = EMIT(RM_CHOOSE_TO_ABORT, i + 1);
            t->rm[i] = WITH_RM_STATE(r, ABORTED);
        }
        /* RMRcvCommitMsg(r): [type |-> "Commit"] \in msgs */
        if (s->msg_commit) {
            t = EMIT(RM_RCV_COMMIT_MSG, i + 1);
            t->rm[i] = WITH_RM_STATE(r, COMMITTED);
        }
        /* RMRcvAbortMsg(r): [type |-> "Abort"] \in msgs */
        if (s->msg_abort) {
            t = EMIT(RM_RCV_ABORT_MSG, i + 1);
            t->rm[i] = WITH_RM_STATE(r, ABORTED);
        }
    }
}

/* TCConsistent (invariants/two_phase.py, tc_consistent): no RM committed while another aborted */
static uint32_t km_violations(const km_state *s) {
    int committed = 0, aborted = 0;
    for (int i = 0; i < KM_RM; i++) {
        committed |= RM_STATE(s->rm[i]) == COMMITTED;
        aborted |= RM_STATE(s->rm[i]) == ABORTED;
    }
    return committed && aborted ? 1u : 0u;
}

/* TwoPhase.canonical: the RMs sorted by (rmState, in tmPrepared, Prepared sent) */
static void km_canonical(km_state *s) {
    for (int i = 1; i < KM_RM; i++) {
        uint8_t v = s->rm[i];
        int j = i - 1;
        while (j >= 0 && s->rm[j] > v) { s->rm[j + 1] = s->rm[j]; j--; }
        s->rm[j + 1] = v;
    }
}
