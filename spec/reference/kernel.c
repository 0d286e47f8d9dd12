/* The compiled successor kernel of Kafka's published TLA+ specifications: spec/reference/base.py
   (KafkaReplication), kip101.py, kip279.py and kip320.py in C, with the invariants of
   invariants/reference.py.

   The readable model is the reference: a rule changes there first, then here, and the equivalence tests
   (tests/test_kernel.py) show the two agree. Each rule below names the readable method it follows; the
   successors come in the readable model's order, duplicates included (TLC generates them; see base.py).

   Compile-time constants (spec/reference/kernel.py passes them):
     KM_R, KM_L, KM_M, KM_E   Replicas, LogSize, MaxRecords, MaxLeaderEpoch
     KM_VARIANT               101, 279 or 320: which module's Next
     KM_MUTANT                1: a deliberate change (ControllerElectLeader without its guard that the new
                              leader differs from the current one), which the
                              equivalence test must catch

   Encoding: replica r (1 .. R) at index r - 1; None and Nil are -1; an ISR is a bit mask (bit r - 1);
   a log is its length and its records (id, epoch), zero past its end; the LeaderAndIsr requests are kept
   by leader epoch (every request has its own: ControllerUpdateIsr draws a fresh one), so iterating the
   epochs upwards is base.py's sorted_requests. */

#include <stdint.h>

#ifndef KM_MUTANT
#define KM_MUTANT 0
#endif

typedef struct {
    uint8_t log_len[KM_R];
    uint8_t log_id[KM_R][KM_L];
    int8_t log_epoch[KM_R][KM_L];
    uint8_t hw[KM_R];
    int8_t leader_epoch[KM_R];
    int8_t leader[KM_R];
    uint8_t isr[KM_R];
    uint8_t next_record_id;
    uint8_t next_leader_epoch;
    uint8_t req_present[KM_E + 1];
    int8_t req_leader[KM_E + 1];
    uint8_t req_isr[KM_E + 1];
    int8_t q_epoch;
    int8_t q_leader;
    uint8_t q_isr;
} km_state;

#define KM_MAX_SUCC (4 * KM_R + (KM_E + 1) + 3 * KM_R * KM_R + 2 * KM_R * KM_R * (KM_E + 1))
#define KM_INVARIANTS 4 /* TypeOk, WeakIsr, StrongIsr, LogMatching */

#include "kernel_search.h" /* checker/kernel_search.h: km_succ, km_emit and the search */

#define NONE (-1)
#define ALL ((uint8_t)((1u << KM_R) - 1))
#define BIT(r) ((uint8_t)(1u << ((r) - 1)))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* action kinds (the code is kind << 24 | p1 << 16 | p2 << 8 | p3, parameters in the readable Action's order) */
enum { CONTROLLER_ELECT_LEADER, CONTROLLER_SHRINK_ISR, BECOME_LEADER, LEADER_WRITE, LEADER_SHRINK_ISR,
       LEADER_EXPAND_ISR, LEADER_INC_HIGH_WATERMARK, BECOME_FOLLOWER_TRUNCATE_KIP101,
       BECOME_FOLLOWER_TRUNCATE_KIP279, FOLLOWER_REPLICATE, FENCED_FOLLOWER_FETCH,
       FENCED_LEADER_INC_HIGH_WATERMARK, FENCED_LEADER_SHRINK_ISR, FENCED_LEADER_EXPAND_ISR,
       FENCED_BECOME_FOLLOWER_AND_TRUNCATE };

#define CODE(kind, a, b, c) ((uint32_t)(kind) << 24 | (uint32_t)(a) << 16 | (uint32_t)(b) << 8 | (uint32_t)(c))

/* -- operators (base.py) ------------------------------------------------------------------------- */

/* controller_update_isr: the fresh epoch nextLeaderEpoch, if any is left; NULL when used up */
static km_state *controller_update_isr(km_succ *out, const km_state *s, uint32_t code, int new_leader,
                                       uint8_t new_isr) {
    int epoch = s->next_leader_epoch;
    if (epoch > KM_E) return 0;
    km_state *t = km_emit(out, s, code);
    t->next_leader_epoch = (uint8_t)(epoch + 1);
    t->q_epoch = (int8_t)epoch;
    t->q_leader = (int8_t)new_leader;
    t->q_isr = new_isr;
    t->req_present[epoch] = 1;
    t->req_leader[epoch] = (int8_t)new_leader;
    t->req_isr[epoch] = new_isr;
    return t;
}

/* is_true_leader */
static int is_true_leader(const km_state *s, int leader) {
    return s->q_leader == leader && s->leader[leader - 1] == leader && s->leader_epoch[leader - 1] == s->q_epoch;
}

/* quorum_update_leader_and_isr: only the true leader writes the ISR, to ZK and locally */
static void quorum_update_leader_and_isr(km_succ *out, const km_state *s, uint32_t code, int leader,
                                         uint8_t new_isr, int copies) {
    if (!is_true_leader(s, leader) || s->q_leader != leader) return;
    for (int c = 0; c < copies; c++) {
        km_state *t = km_emit(out, s, code);
        t->q_isr = new_isr;
        t->isr[leader - 1] = new_isr;
    }
}

/* is_follower_caught_up */
static int is_follower_caught_up(const km_state *s, int leader, int follower, int end_offset) {
    if (s->leader[follower - 1] != leader) return 0;
    if (end_offset == 0) return 1;
    int offset = end_offset - 1;
    return offset < s->log_len[leader - 1] && offset < s->log_len[follower - 1];
}

static int same_record(const km_state *s, int r1, int r2, int offset) {
    return s->log_id[r1 - 1][offset] == s->log_id[r2 - 1][offset] &&
           s->log_epoch[r1 - 1][offset] == s->log_epoch[r2 - 1][offset];
}

/* truncate_to's effect (its guard, new_end <= endOffset, is the caller's): records past the end are zero */
static void truncate_log(km_state *t, int replica, int new_end) {
    for (int o = new_end; o < t->log_len[replica - 1]; o++) {
        t->log_id[replica - 1][o] = 0;
        t->log_epoch[replica - 1][o] = 0;
    }
    t->log_len[replica - 1] = (uint8_t)new_end;
}

/* first_non_matching_offset_from_tail */
static int first_non_matching_offset_from_tail(const km_state *s, int leader, int follower) {
    int leader_len = s->log_len[leader - 1];
    if (leader_len == 0) return 0;
    for (int o = MIN(s->log_len[follower - 1], leader_len) - 1; o >= 0; o--)
        if (same_record(s, follower, leader, o)) return o + 1;
    return 0;
}

/* replicate_to's guard: the follower's next offset is within LogSize and the leader holds it */
static int can_replicate(const km_state *s, int from, int to) {
    int offset = s->log_len[to - 1];
    return offset < KM_L && offset < s->log_len[from - 1];
}

/* replicate_to's effect, and the follower's high watermark min(leader's hw, new end) */
static void replicate(km_state *t, const km_state *s, int from, int to) {
    int offset = s->log_len[to - 1];
    t->log_id[to - 1][offset] = s->log_id[from - 1][offset];
    t->log_epoch[to - 1][offset] = s->log_epoch[from - 1][offset];
    t->log_len[to - 1] = (uint8_t)(offset + 1);
    t->hw[to - 1] = (uint8_t)MIN(s->hw[from - 1], offset + 1);
}

/* -- the actions of KafkaReplication (base.py) ------------------------------------------------------ */

/* ControllerElectLeader */
static void controller_elect_leader(const km_state *s, km_succ *out) {
    for (int r = 1; r <= KM_R; r++)
        if ((s->q_isr & BIT(r)) && (s->q_leader != r || KM_MUTANT))
            controller_update_isr(out, s, CODE(CONTROLLER_ELECT_LEADER, r, 0, 0), r, s->q_isr);
}

/* ControllerShrinkIsr (the current revision: no guard on a last replica) */
static void controller_shrink_isr(const km_state *s, km_succ *out) {
    for (int r = 1; r <= KM_R; r++) {
        uint32_t code = CODE(CONTROLLER_SHRINK_ISR, r, 0, 0);
        int only_replica = s->q_isr == BIT(r);
        if (s->q_leader == r && only_replica)
            controller_update_isr(out, s, code, NONE, s->q_isr);
        else if (s->q_leader == r)
            controller_update_isr(out, s, code, NONE, s->q_isr & ~BIT(r));
        else if (s->q_isr & BIT(r))
            controller_update_isr(out, s, code, s->q_leader, s->q_isr & ~BIT(r));
    }
}

/* BecomeLeader */
static void become_leader(const km_state *s, km_succ *out) {
    for (int e = 0; e <= KM_E; e++) {
        if (!s->req_present[e]) continue;
        int leader = s->req_leader[e];
        if (leader == NONE || e <= s->leader_epoch[leader - 1]) continue;
        km_state *t = km_emit(out, s, CODE(BECOME_LEADER, e, 0, 0));
        t->leader_epoch[leader - 1] = (int8_t)e;
        t->leader[leader - 1] = (int8_t)leader;
        t->isr[leader - 1] = s->req_isr[e];
    }
}

/* LeaderWrite */
static void leader_write(const km_state *s, km_succ *out) {
    int id = s->next_record_id;
    if (id >= KM_M) return;
    for (int r = 1; r <= KM_R; r++) {
        int len = s->log_len[r - 1];
        if (s->leader[r - 1] != r || len >= KM_L) continue;
        km_state *t = km_emit(out, s, CODE(LEADER_WRITE, r, id, len));
        t->log_id[r - 1][len] = (uint8_t)id;
        t->log_epoch[r - 1][len] = s->leader_epoch[r - 1];
        t->log_len[r - 1] = (uint8_t)(len + 1);
        t->next_record_id = (uint8_t)(id + 1);
    }
}

/* LeaderShrinkIsr */
static void leader_shrink_isr(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        uint8_t isr = s->isr[l - 1];
        int end = s->log_len[l - 1];
        for (int r = 1; r <= KM_R; r++) {
            if (r == l || !(isr & BIT(r)) || is_follower_caught_up(s, l, r, end)) continue;
            quorum_update_leader_and_isr(out, s, CODE(LEADER_SHRINK_ISR, l, r, 0), l, isr & ~BIT(r), 1);
        }
    }
}

/* LeaderExpandIsr */
static void leader_expand_isr(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        uint8_t isr = s->isr[l - 1];
        for (int r = 1; r <= KM_R; r++) {
            if ((isr & BIT(r)) || !is_follower_caught_up(s, l, r, s->hw[l - 1])) continue;
            quorum_update_leader_and_isr(out, s, CODE(LEADER_EXPAND_ISR, l, r, 0), l, isr | BIT(r), 1);
        }
    }
}

/* LeaderIncHighWatermark */
static void leader_inc_high_watermark(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        int offset = s->hw[l - 1];
        if (s->leader[l - 1] != l || offset >= KM_L) continue;
        int all = 1;
        for (int f = 1; f <= KM_R; f++)
            if ((s->isr[l - 1] & BIT(f)) && !(s->leader[f - 1] == l && offset < s->log_len[f - 1])) all = 0;
        if (!all) continue;
        km_state *t = km_emit(out, s, CODE(LEADER_INC_HIGH_WATERMARK, offset, l, 0));
        t->hw[l - 1] = (uint8_t)(offset + 1);
    }
}

/* become_follower_and_truncate_to: one successor per request of this leader in a newer epoch */
static void become_follower_and_truncate_to(const km_state *s, km_succ *out, int kind, int leader, int replica,
                                            int offset) {
    if (leader == replica) return;
    for (int e = 0; e <= KM_E; e++) {
        if (!s->req_present[e] || s->req_leader[e] != leader || e <= s->leader_epoch[replica - 1]) continue;
        if (offset > s->log_len[replica - 1]) return; /* TruncateTo disabled */
        km_state *t = km_emit(out, s, CODE(kind, leader, replica, e));
        truncate_log(t, replica, offset);
        t->hw[replica - 1] = (uint8_t)MIN(offset, s->hw[replica - 1]);
        t->leader_epoch[replica - 1] = (int8_t)e;
        t->leader[replica - 1] = (int8_t)leader;
        t->isr[replica - 1] = s->req_isr[e];
    }
}

/* FollowerReplicate */
static void follower_replicate(const km_state *s, km_succ *out) {
    for (int f = 1; f <= KM_R; f++) {
        int l = s->leader[f - 1];
        if (l == NONE || s->leader[l - 1] != l || !can_replicate(s, l, f)) continue;
        replicate(km_emit(out, s, CODE(FOLLOWER_REPLICATE, f, l, 0)), s, l, f);
    }
}

/* -- Kip101.tla (kip101.py) ------------------------------------------------------------------------ */

/* Kip101.lookup_offset_for_epoch */
static int lookup_offset_for_epoch(const km_state *s, int leader, int follower, int epoch) {
    int len = s->log_len[leader - 1];
    if (len == 0) return s->hw[follower - 1];
    if (s->log_epoch[leader - 1][len - 1] == epoch) return len;
    for (int o = 0; o < len; o++)
        if (s->log_epoch[leader - 1][o] > epoch) return o;
    return s->hw[follower - 1];
}

/* BecomeFollowerTruncateKip101 */
static void become_follower_truncate_kip101(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++)
        for (int r = 1; r <= KM_R; r++) {
            int len = s->log_len[r - 1];
            int offset = len == 0 ? 0 : lookup_offset_for_epoch(s, l, r, s->log_epoch[r - 1][len - 1]);
            become_follower_and_truncate_to(s, out, BECOME_FOLLOWER_TRUNCATE_KIP101, l, r, offset);
        }
}

/* -- Kip279.tla (kip279.py) ------------------------------------------------------------------------ */

/* BecomeFollowerTruncateKip279: on an empty log both disjuncts hold (the successor twice, as TLC) */
static void become_follower_truncate_kip279(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++)
        for (int r = 1; r <= KM_R; r++) {
            if (s->log_len[r - 1] == 0)
                become_follower_and_truncate_to(s, out, BECOME_FOLLOWER_TRUNCATE_KIP279, l, r, 0);
            become_follower_and_truncate_to(s, out, BECOME_FOLLOWER_TRUNCATE_KIP279, l, r,
                                            first_non_matching_offset_from_tail(s, l, r));
        }
}

/* -- Kip320.tla (kip320.py) ------------------------------------------------------------------------ */

/* Kip320.is_following_leader_epoch */
static int is_following_leader_epoch(const km_state *s, int leader, int follower) {
    return s->leader[leader - 1] == leader && s->leader[follower - 1] == leader &&
           s->leader_epoch[follower - 1] == s->leader_epoch[leader - 1];
}

/* FencedFollowerFetch */
static void fenced_follower_fetch(const km_state *s, km_succ *out) {
    for (int f = 1; f <= KM_R; f++) {
        int l = s->leader[f - 1];
        if (l < 1 || !is_following_leader_epoch(s, l, f) || !can_replicate(s, l, f)) continue;
        replicate(km_emit(out, s, CODE(FENCED_FOLLOWER_FETCH, f, l, 0)), s, l, f);
    }
}

/* FencedLeaderIncHighWatermark (no ReplicaPresumesLeadership conjunct, as in the TLA+ text) */
static void fenced_leader_inc_high_watermark(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        int hw = s->hw[l - 1];
        if (hw >= s->log_len[l - 1]) continue;
        int all = 1;
        for (int f = 1; f <= KM_R; f++)
            if ((s->isr[l - 1] & BIT(f)) && !(is_following_leader_epoch(s, l, f) && hw < s->log_len[f - 1])) all = 0;
        if (!all) continue;
        km_state *t = km_emit(out, s, CODE(FENCED_LEADER_INC_HIGH_WATERMARK, l, 0, 0));
        t->hw[l - 1] = (uint8_t)(hw + 1);
    }
}

/* FencedLeaderShrinkIsr: when both disjuncts hold, the successor twice (as TLC) */
static void fenced_leader_shrink_isr(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        uint8_t isr = s->isr[l - 1];
        int leader_end = s->log_len[l - 1];
        for (int f = 1; f <= KM_R; f++) {
            if (f == l || !(isr & BIT(f))) continue;
            int copies = !is_following_leader_epoch(s, l, f) + (s->log_len[f - 1] < leader_end);
            if (!copies) continue;
            quorum_update_leader_and_isr(out, s, CODE(FENCED_LEADER_SHRINK_ISR, l, f, 0), l, isr & ~BIT(f), copies);
        }
    }
}

/* has_high_watermark_reached_current_epoch */
static int has_high_watermark_reached_current_epoch(const km_state *s, int leader) {
    int hw = s->hw[leader - 1], len = s->log_len[leader - 1];
    return hw == len || (hw < len && s->log_epoch[leader - 1][hw] == s->leader_epoch[leader - 1]);
}

/* FencedLeaderExpandIsr */
static void fenced_leader_expand_isr(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        uint8_t isr = s->isr[l - 1];
        int hw = s->hw[l - 1];
        for (int f = 1; f <= KM_R; f++) {
            if ((isr & BIT(f)) || !is_following_leader_epoch(s, l, f)) continue;
            if (hw > 0 && hw - 1 >= s->log_len[f - 1]) continue; /* HasFollowerReachedHighWatermark */
            if (!has_high_watermark_reached_current_epoch(s, l)) continue;
            quorum_update_leader_and_isr(out, s, CODE(FENCED_LEADER_EXPAND_ISR, l, f, 0), l, isr | BIT(f), 1);
        }
    }
}

/* FencedBecomeFollowerAndTruncate */
static void fenced_become_follower_and_truncate(const km_state *s, km_succ *out) {
    for (int l = 1; l <= KM_R; l++) {
        if (s->leader[l - 1] != l) continue; /* ReplicaPresumesLeadership(leader) */
        for (int r = 1; r <= KM_R; r++) {
            if (l == r) continue;
            for (int e = 0; e <= KM_E; e++) {
                if (!s->req_present[e] || s->req_leader[e] != l || e <= s->leader_epoch[r - 1]) continue;
                if (s->leader_epoch[l - 1] != e) continue;
                int offset = first_non_matching_offset_from_tail(s, l, r);
                if (offset > s->log_len[r - 1]) continue;
                km_state *t = km_emit(out, s, CODE(FENCED_BECOME_FOLLOWER_AND_TRUNCATE, l, r, e));
                truncate_log(t, r, offset);
                t->hw[r - 1] = (uint8_t)MIN(offset, s->hw[r - 1]);
                t->leader_epoch[r - 1] = (int8_t)e;
                t->leader[r - 1] = (int8_t)l;
                t->isr[r - 1] = s->req_isr[e];
            }
        }
    }
}

/* -- Next: each module's disjuncts in the order of its TLA+ text (next_actions) ------------------------ */
static void km_successors(const km_state *s, km_succ *out) {
    controller_elect_leader(s, out);
    controller_shrink_isr(s, out);
    become_leader(s, out);
#if KM_VARIANT == 320
    fenced_leader_expand_isr(s, out);
    fenced_leader_shrink_isr(s, out);
    leader_write(s, out);
    fenced_leader_inc_high_watermark(s, out);
    fenced_become_follower_and_truncate(s, out);
    fenced_follower_fetch(s, out);
#else
    leader_expand_isr(s, out);
    leader_shrink_isr(s, out);
    leader_write(s, out);
    leader_inc_high_watermark(s, out);
#if KM_VARIANT == 101
    become_follower_truncate_kip101(s, out);
#else
    become_follower_truncate_kip279(s, out);
#endif
    follower_replicate(s, out);
#endif
}

/* -- invariants (invariants/reference.py) ------------------------------------------------------------ */

static int quorum_ok(int epoch, int leader, uint8_t isr) {
    return (epoch == -1 || (epoch >= 0 && epoch <= KM_E)) && (leader == NONE || (leader >= 1 && leader <= KM_R)) &&
           (isr & ~ALL) == 0;
}

/* _type_ok_problems */
static int type_ok(const km_state *s) {
    if (s->next_leader_epoch > KM_E + 1 || s->next_record_id > KM_M) return 0;
    for (int r = 0; r < KM_R; r++) {
        if (s->log_len[r] > KM_L || s->hw[r] > KM_L) return 0;
        for (int o = 0; o < s->log_len[r]; o++)
            if (s->log_id[r][o] >= KM_M || s->log_epoch[r][o] < 0 || s->log_epoch[r][o] > KM_E) return 0;
        if (!quorum_ok(s->leader_epoch[r], s->leader[r], s->isr[r])) return 0;
    }
    if (!quorum_ok(s->q_epoch, s->q_leader, s->q_isr)) return 0;
    for (int e = 0; e <= KM_E; e++)
        if (s->req_present[e] && !quorum_ok(e, s->req_leader[e], s->req_isr[e])) return 0;
    return 1;
}

/* _isr_gaps is empty: below a presumed leader's high watermark, every ISR member holds its records */
static int isr_holds(const km_state *s, int strong) {
    for (int r1 = 1; r1 <= KM_R; r1++) {
        int hw = s->hw[r1 - 1];
        if (s->leader[r1 - 1] != r1 || hw == 0) continue;
        uint8_t isr = strong ? s->q_isr : s->isr[r1 - 1];
        for (int r2 = 1; r2 <= KM_R; r2++) {
            if (!(isr & BIT(r2))) continue;
            for (int o = 0; o < hw; o++)
                if (!(o < s->log_len[r1 - 1] && o < s->log_len[r2 - 1] && same_record(s, r1, r2, o))) return 0;
        }
    }
    return 1;
}

/* _log_mismatch is None */
static int log_matching(const km_state *s) {
    for (int r1 = 1; r1 <= KM_R; r1++)
        for (int r2 = r1 + 1; r2 <= KM_R; r2++)
            for (int o = MIN(s->log_len[r1 - 1], s->log_len[r2 - 1]) - 1; o >= 0; o--) {
                if (s->log_epoch[r1 - 1][o] != s->log_epoch[r2 - 1][o]) continue;
                for (int p = 0; p <= o; p++)
                    if (!same_record(s, r1, r2, p)) return 0;
                break;
            }
    return 1;
}

static uint32_t km_violations(const km_state *s) {
    return (uint32_t)!type_ok(s) | (uint32_t)!isr_holds(s, 0) << 1 | (uint32_t)!isr_holds(s, 1) << 2 |
           (uint32_t)!log_matching(s) << 3;
}

/* no symmetry: the readable model has none */
static void km_canonical(km_state *s) { (void)s; }
