/* The compiled successor kernel of the Kafka model, the ZooKeeper rows (0.10.2 to 3.9.1) and
   (KM_F_KRAFT, the section "the KRaft control plane") the KRaft rows kraft-3.3 to kraft-4.1:
   spec/kafka/model.py (successors, _replica_actions, _deliveries), actions_control.py, actions_data.py (with
   truncate-on-fetch), log.py, updates.py, controllers.py (ZooKeeperController, AlterIsrController,
   KRaftController), actions_alter_partition.py (the leader's AlterIsr and AlterPartition), actions_alter_isr.py,
   actions_kraft.py, actions_broker_lifecycle.py and (KM_CONSUMERS, the section "the consumers") clients.py in C,
   with the canonical form of symmetry.py, the dead answers of dead.py and the invariants of
   invariants/kafka_log_matching.py, kafka_clients.py and kafka_kraft.py.

   The readable model is the reference: a rule changes there first, then here, and tests/test_kafka_kernel.py shows
   the two agree. Each function below names the readable function it follows; the successors come in the readable
   model's order. spec/kafka/kernel.py documents the state layout and packs states into it.

   Compile-time constants (spec/kafka/kernel.py passes them; they shape the state, or choose a section):
     KM_N, KM_R, KM_E           brokers, records, epochs (the bounds that size the logs, the epoch cache, the ISR)
     KM_NET                     the network's slots (a message past them stops the search: KM_ERR_NETWORK)
     KM_F_KRAFT                 the KRaft rows (the section "the KRaft control plane" and its fields)
     KM_F_ZOOKEEPER_ALTER_ISR   alter-isr (KIP-497): the AlterIsr messages and fields
     KM_MUTANT                  a deliberate change, which the equivalence test must catch: 1 ExpandIsr without its
                                guard that the follower's fetch is being answered (_fetch_being_answered); 2
                                TruncateOnDivergingEpoch without KAFKA-13207's skip of a partition that left the
                                fetcher; 3 a diverging answer's HW taken despite KAFKA-14704's fix; 4 the ZooKeeper
                                controller's AlterIsr without KAFKA-14140's liveness check; 5 an AlterIsr answered
                                STALE_BROKER_EPOCH not sent again; 6 on the KRaft rows, ExpandIsr's AlterPartition
                                without KIP-841/903's eligibility check (_eligible); 7 a consumer's metadata update
                                that does not put its position into validation (KIP-320's truncation detection
                                skipped, ClientActions._metadata_state)
     KM_CONSUMERS               the bound consumers (clients.ClientActions)
     KM_CONSUMED                a consumer's consumed ghost's slots (past them: KM_ERR_CONSUMED)
   Every other bound and feature flag is a run-time constant, config.<name> (KM_CONFIG below): one compiled
   library serves every value of them (checker/kernel.py). */

#include <stdint.h>
#include <string.h>

#ifndef KM_MUTANT
#define KM_MUTANT 0
#endif

#define KM_LOG (KM_R > 0 ? KM_R : 1)
#define KM_CACHE (KM_E + 1)
/* a message's bytes: a FetchResponse's, a LeaderAndIsr's, and with alter-isr an AlterIsr's (7 + 2N) or its answer's
   (9 + N) and a LeaderAndIsr's zkVersion */
#define KM_DATA_MSG ((10 + 2 * KM_R) > (7 + KM_N) ? (10 + 2 * KM_R) : (7 + KM_N))
#define KM_ALTER_MSG ((7 + 2 * KM_N) > (9 + KM_N) ? (7 + 2 * KM_N) : (9 + KM_N))
#ifndef KM_F_KRAFT
#define KM_F_KRAFT 0
#endif
/* a LeaderAndIsr carries a partition epoch and the network holds AlterPartition (AlterIsr) requests and answers:
   alter-isr's zkVersion, the KRaft rows' partition epoch */
#define KM_VERSIONED (KM_F_ZOOKEEPER_ALTER_ISR || KM_F_KRAFT)
#define KM_MSG (KM_VERSIONED && KM_ALTER_MSG > KM_DATA_MSG ? KM_ALTER_MSG : KM_DATA_MSG)

typedef struct {
    uint8_t alive;
    uint8_t log_len;
    int8_t log[KM_LOG][2]; /* (epoch, ident) */
    int8_t hw;
    uint8_t cache_len;
    int8_t cache[KM_CACHE][2]; /* (epoch, start offset) */
    int8_t leader;
    int8_t epoch;
    uint8_t isr; /* bit i: broker i */
    uint8_t fetch;
    uint8_t has_remote;
    int8_t remote[KM_N];
    int8_t broker_epoch;
    uint8_t stopping;
    int8_t incarnation;
    uint8_t stale;
    int8_t reconciled;
    uint8_t idle_cause;
} km_broker;

/* truncate-on-fetch (2.8+): Broker.pending_diverging, a diverging epoch a follower read from a fetch answer and has
   not applied yet (source -1: none, the other fields 0) */
typedef struct {
    int8_t source;        /* the leader that answered */
    int8_t request_epoch; /* the request's leader epoch */
    int8_t epoch;         /* the diverging epoch */
    int8_t end;           /* its end offset */
} km_pending;

/* alter-isr (KIP-497, 2.7.0+ ZooKeeper rows): Broker.partition_epoch (the zkVersion it last learned),
   alter_pending (an AlterIsr not answered yet: isr is the maximal ISR) and committed_isr (a mask) */
typedef struct {
    int8_t partition_epoch;
    uint8_t alter_pending;
    uint8_t committed_isr;
} km_alter;

#ifndef KM_CONSUMERS
#define KM_CONSUMERS 0
#endif
#ifndef KM_CONSUMED
#define KM_CONSUMED 1
#endif
/* clients._fetch_answer: what a fetch at a consumer's position does to it (position, last epoch, the records read
   as (offset, epoch, ident), a silent skip, a reset surfaced) */
typedef struct {
    int8_t position, last_epoch;
    uint8_t read_len;
    int8_t read[KM_LOG][3];
    uint8_t skip, reset;
} km_fetch_answer;

/* clients.py's Consumer (state.py): what it believes, its ghosts (consumed: at most KM_CONSUMED entries, past them
   the search stops: KM_ERR_CONSUMED) and, with consumer_inflight=1, its request or answer in flight (q_kind 0:
   none, every q_ and a_ field then 0): FETCH (q_epoch, q_position), FETCH_RESPONSE (q_position, q_answered and
   answer), VALIDATE (q_epoch, q_last_epoch), VALIDATE_RESPONSE (q_epoch, q_last_epoch, q_answered, a_epoch, a_end) */
typedef struct {
    int8_t leader, epoch, position, last_epoch;
    uint8_t validating;
    uint8_t consumed_len;
    int8_t consumed[KM_CONSUMED][3];
    uint8_t skipped, surfaced, read_before_unclean;
    int8_t q_broker;
    uint8_t q_kind;
    int8_t q_incarnation, q_epoch, q_position, q_last_epoch;
    uint8_t q_answered;
    km_fetch_answer answer;
    int8_t a_epoch, a_end;
} km_consumer;

typedef struct {
    km_broker b[KM_N];
    int8_t c_leader;
    int8_t c_epoch;
    uint8_t c_isr;
    int8_t registered[KM_N];
    uint8_t net_len;
    uint8_t net[KM_NET][KM_MSG]; /* sorted, order-preserving encoding (spec/kafka/kernel.py) */
    int8_t produced, crashes, bumps, shutdowns, bounces, losses;
    uint8_t committed_len;
    int8_t committed[KM_LOG][3]; /* (offset, epoch, ident), sorted */
    uint8_t acked_len;
    int8_t acked[KM_LOG][3]; /* the producer's acknowledged records (offset, epoch, ident), sorted */
    km_pending pending[KM_N]; /* each broker's pending diverging epoch (truncate-on-fetch) */
    km_alter alter[KM_N];     /* alter-isr: each broker's zkVersion and pending AlterIsr */
    int8_t c_partition_epoch; /* alter-isr: Controller.partition_epoch, the partition state znode's zkVersion */
    int8_t alters, alter_losses; /* alter-isr: the bound counters */
#if KM_F_KRAFT
    /* the KRaft rows (spec/kafka/kernel.py Packing._kraft_tail): each broker's followers' broker epochs as a leader
       (KIP-903; has_remote_epochs 0: ()), the controller's ELR (KIP-966), the KRaft bounds' counters; the partition
       epochs, pending AlterPartition and committed ISR are alter[] and c_partition_epoch, as alter-isr's */
    struct {
        uint8_t has_remote_epochs;
        int8_t remote_epochs[KM_N];
    } k[KM_N];
    uint8_t c_elr; /* bit mask */
    int8_t unclean_shutdowns, clean_shutdowns, fences;
#endif
#if KM_CONSUMERS
    km_consumer cons[KM_CONSUMERS]; /* clients.py: KafkaState.consumers (spec/kafka/kernel.py Packing._consumer) */
#endif
} km_state;

/* a bound on one state's successors: the controller's (an election per live ISR member for each death), each broker's
   own (produce, HW, an ISR change per follower, a request, truncations (to the HW, to a diverging epoch), shutdown,
   crash, bounce), a delivery and a
   loss per control channel, and per message in flight one step (a ControlledShutdown one per new leader) */
#define KM_MAX_SUCC (11 * KM_N + 4 * KM_N * KM_N + 2 * KM_NET * KM_N + 8 + KM_F_KRAFT * KM_N * (KM_R + 4 * KM_N + 8) + \
                     KM_CONSUMERS * (KM_N + 2))
#define KM_INVARIANTS 13 /* spec/kafka/kernel.py INVARIANTS */
#define KM_HAS_REDUCE 1

/* The run-time constants (checker/kernel_search.h KM_CONFIG; spec/kafka/kernel.py passes them in this order,
   RUNTIME_BOUNDS then RUNTIME_FLAGS): the bounds that only guard actions, the producer's acks (0, 1, -1: all) and
   min.insync.replicas (clients.producer_for), consumer_inflight (clients.ClientActions), and every feature flag
   (spec.kafka.protocols.Features, 0 or 1) but the two that shape the state (KM_F_KRAFT, KM_F_ZOOKEEPER_ALTER_ISR).
   The rules read them as config.crashes, config.kafka_7415, ... */
#define KM_CONFIG(X) \
    X(crashes) X(bumps) X(losses) X(inflight) X(shutdowns) X(bounces) X(acks) X(min_isr) X(alters) X(alter_losses) \
    X(unclean_shutdowns) X(metadata_lag) X(fences) X(clean_shutdowns) X(consumer_inflight) \
    X(kafka_5642) X(kafka_5163) X(epoch_in_response) X(kafka_7415) X(kafka_7128) X(kafka_7164) X(kafka_7414) \
    X(leader_epoch_fencing) X(kafka_7152) X(kafka_9654) X(kafka_8400) X(truncation_lowers_hw) \
    X(reject_stale_broker_epoch) X(detect_bounced_broker) X(reject_stale_shutdown) X(kafka_10706_fix) \
    X(kafka_13141) X(kafka_18991) X(unclean) X(epoch_cache) X(hw_truncation) X(uses_offsets_request) \
    X(removes_fenced_partition) X(checks_offsets_answer_epoch) X(effective_min_isr) X(truncate_on_fetch) \
    X(kafka_13207) X(kafka_14704) X(kafka_14140) X(kafka_15583) X(kip_841) X(kip_903) \
    X(fetch_carries_broker_epoch) X(kafka_15021) X(kip_966_elr) X(detects_unclean_shutdown) X(kafka_18635) \
    X(unclean_election_clears_elr) X(kraft_shutdown_stops_fetcher) X(fenced_broker_clean_shutdown) \
    X(consumer_truncation_detection) X(fetch_from_follower)
#include "kernel_search.h" /* checker/kernel_search.h: km_succ, km_emit and the search */

/* errors that stop the search (never a silently different one): km_succ.error */
#define KM_ERR_NETWORK 1 /* more messages in flight than KM_NET */
#define KM_ERR_LOG 2     /* a log or the committed ghost past KM_R records */
#define KM_ERR_UNCOMPILED 3 /* a message or branch the kernel does not compile */
#define KM_ERR_CONSUMED 4 /* a consumer's consumed ghost past KM_CONSUMED records */

/* spec/kafka/state.py */
enum { NO_FETCHER, TRUNCATING, FETCHING, TRUNCATING_AGAIN };
enum { IDLE_NONE, IDLE_FENCED, IDLE_STOPPED, IDLE_RESTARTED };
enum { LEADER_AND_ISR = 1, FETCH, FETCH_RESPONSE, OFFSETS_FOR_LEADER_EPOCH, OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
       STOP_REPLICA, CONTROLLED_SHUTDOWN, ALTER_PARTITION, ALTER_PARTITION_RESPONSE };
#define IS_DATA(kind) ((kind) >= FETCH && (kind) <= OFFSETS_FOR_LEADER_EPOCH_RESPONSE) /* DATA_KINDS */
#define IS_CONTROL(kind) ((kind) == LEADER_AND_ISR || (kind) == STOP_REPLICA) /* CONTROL_KINDS */
enum { E_NONE, E_NOT_LEADER, E_FENCED_LEADER_EPOCH, E_UNKNOWN_LEADER_EPOCH, E_OFFSET_OUT_OF_RANGE,
       E_INVALID_UPDATE_VERSION, E_INELIGIBLE_REPLICA, E_STALE_BROKER_EPOCH };
#define UNDEFINED (-1)
#define DEAD (-1)
#define NO_LEADER (-1)

/* action kinds: spec/kafka/kernel.py KINDS (the model's tables), code kind << 24 | p1 << 16 | p2 << 8 */
enum { A_ELECT, A_PREFERRED, A_UNCLEAN, A_CRASH, A_RESTART, A_BUMP, A_BROKER_FAILURE, A_BROKER_CHANGE, A_DELIVER,
       A_LOSE, A_PRODUCE, A_ADVANCE, A_TRUNC_HW, A_SEND_FETCH, A_SERVE_FETCH, A_RECEIVE_FETCH, A_SEND_OFFSETS,
       A_SERVE_OFFSETS, A_RECEIVE_OFFSETS, A_SHRINK, A_EXPAND, A_SHUTDOWN, A_BOUNCE, A_DELIVER_STOP,
       A_PROCESS_SHUTDOWN, A_TRUNCATE_DIVERGING, A_PROCESS_ALTER, A_RECEIVE_ALTER, A_LOSE_ALTER,
       A_FENCE, A_UNFENCE, A_UNCLEAN_SHUTDOWN, A_KRAFT_SHUTDOWN, A_CLEAN_SHUTDOWN,
       A_CONSUMER_METADATA, A_CONSUMER_FETCH, A_CONSUMER_VALIDATE, A_CONSUMER_FETCH_FOLLOWER, A_CONSUMER_SEND_FETCH,
       A_CONSUMER_SERVE_FETCH, A_CONSUMER_RECEIVE_FETCH, A_CONSUMER_SEND_VALIDATE, A_CONSUMER_SERVE_VALIDATE,
       A_CONSUMER_RECEIVE_VALIDATE, A_CONSUMER_DISCONNECT };
#define CODE(kind, a, b) ((uint32_t)(kind) << 24 | (uint32_t)(a) << 16 | (uint32_t)(b) << 8)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define IN(mask, i) (((mask) >> (i)) & 1)

/* -- messages: decoded into named fields, encoded order-preserving (spec/kafka/kernel.py Packing._message) ---- */
typedef struct {
    int kind, src, dst, epoch, leader, isr, broker_epoch, meant; /* LeaderAndIsr: dst, epoch, leader, isr, ... */
    int offset, last_epoch;                                      /* Fetch */
    int error, nrec, hw, diverging_epoch, diverging_offset;       /* FetchResponse */
    int8_t rec[KM_LOG][2];
    int requested, answer_epoch, end_offset; /* OffsetsForLeaderEpoch and its answer */
    int partition_epoch;                      /* alter-isr: a LeaderAndIsr's zkVersion, an AlterIsr's and its answer's */
    int broker_epochs[KM_N];                  /* AlterIsr */
    int new_epoch, new_partition_epoch;       /* its answer */
} km_msg;

static void msg_decode(const uint8_t *p, km_msg *m) {
    m->kind = p[0] - 2;
    switch (m->kind) {
    case LEADER_AND_ISR: {
        m->dst = p[1] - 2; m->epoch = p[2] - 2; m->leader = p[3] - 2;
        int at = 4;
        m->isr = 0;
        while (p[at]) m->isr |= 1 << (p[at++] - 2);
        m->broker_epoch = p[at + 1] - 2; m->meant = p[at + 2] - 2;
        m->partition_epoch = KM_VERSIONED ? p[at + 3] - 2 : 0;
        m->src = UNDEFINED;
        break;
    }
    case ALTER_PARTITION: {
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->partition_epoch = p[4] - 2;
        int at = 5;
        m->isr = 0;
        while (p[at]) m->isr |= 1 << (p[at++] - 2);
        at++;
        for (int r = 0; r < KM_N; r++) m->broker_epochs[r] = p[at + r] - 2;
        break;
    }
    case ALTER_PARTITION_RESPONSE: {
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->partition_epoch = p[4] - 2; m->error = p[5] - 2;
        int at = 6;
        m->isr = 0;
        while (p[at]) m->isr |= 1 << (p[at++] - 2);
        m->new_epoch = p[at + 1] - 2; m->new_partition_epoch = p[at + 2] - 2;
        break;
    }
    case FETCH:
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->offset = p[4] - 2; m->last_epoch = p[5] - 2;
        m->broker_epoch = KM_F_KRAFT ? p[6] - 2 : UNDEFINED; /* KIP-903 on KRaft */
        break;
    case FETCH_RESPONSE: {
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->offset = p[4] - 2; m->error = p[5] - 2;
        int at = 6;
        m->nrec = 0;
        while (p[at]) {
            m->rec[m->nrec][0] = (int8_t)(p[at] - 2);
            m->rec[m->nrec][1] = (int8_t)(p[at + 1] - 2);
            m->nrec++;
            at += 2;
        }
        m->hw = p[at + 1] - 2; m->diverging_epoch = p[at + 2] - 2; m->diverging_offset = p[at + 3] - 2;
        break;
    }
    case OFFSETS_FOR_LEADER_EPOCH:
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->requested = p[4] - 2;
        break;
    case STOP_REPLICA:
        m->dst = p[1] - 2; m->epoch = p[2] - 2; m->broker_epoch = p[3] - 2; m->meant = p[4] - 2;
        m->src = UNDEFINED;
        break;
    case CONTROLLED_SHUTDOWN: /* meant: the sender's incarnation */
        m->src = p[1] - 2; m->broker_epoch = p[2] - 2; m->meant = p[3] - 2;
        m->dst = UNDEFINED;
        break;
    default: /* OFFSETS_FOR_LEADER_EPOCH_RESPONSE */
        m->src = p[1] - 2; m->dst = p[2] - 2; m->epoch = p[3] - 2; m->requested = p[4] - 2; m->error = p[5] - 2;
        m->answer_epoch = p[6] - 2; m->end_offset = p[7] - 2;
        break;
    }
}

static void msg_encode(const km_msg *m, uint8_t *p) {
    memset(p, 0, KM_MSG);
    int at = 0;
#define PUT(v) (p[at++] = (uint8_t)((v) + 2))
    PUT(m->kind);
    switch (m->kind) {
    case LEADER_AND_ISR:
        PUT(m->dst); PUT(m->epoch); PUT(m->leader);
        for (int i = 0; i < KM_N; i++)
            if (IN(m->isr, i)) PUT(i);
        p[at++] = 0;
        PUT(m->broker_epoch); PUT(m->meant);
        if (KM_VERSIONED) PUT(m->partition_epoch);
        break;
    case ALTER_PARTITION:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->partition_epoch);
        for (int i = 0; i < KM_N; i++)
            if (IN(m->isr, i)) PUT(i);
        p[at++] = 0;
        for (int r = 0; r < KM_N; r++) PUT(m->broker_epochs[r]);
        p[at++] = 0;
        break;
    case ALTER_PARTITION_RESPONSE:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->partition_epoch); PUT(m->error);
        for (int i = 0; i < KM_N; i++)
            if (IN(m->isr, i)) PUT(i);
        p[at++] = 0;
        PUT(m->new_epoch); PUT(m->new_partition_epoch);
        break;
    case FETCH:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->offset); PUT(m->last_epoch);
        if (KM_F_KRAFT) PUT(m->broker_epoch);
        break;
    case FETCH_RESPONSE:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->offset); PUT(m->error);
        for (int k = 0; k < m->nrec; k++) { PUT(m->rec[k][0]); PUT(m->rec[k][1]); }
        p[at++] = 0;
        PUT(m->hw); PUT(m->diverging_epoch); PUT(m->diverging_offset);
        break;
    case OFFSETS_FOR_LEADER_EPOCH:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->requested);
        break;
    case STOP_REPLICA:
        PUT(m->dst); PUT(m->epoch); PUT(m->broker_epoch); PUT(m->meant);
        break;
    case CONTROLLED_SHUTDOWN:
        PUT(m->src); PUT(m->broker_epoch); PUT(m->meant);
        break;
    default:
        PUT(m->src); PUT(m->dst); PUT(m->epoch); PUT(m->requested); PUT(m->error); PUT(m->answer_epoch);
        PUT(m->end_offset);
        break;
    }
#undef PUT
}

/* updates.remove_message: the network without slot k */
static void net_remove(km_state *t, int k) {
    memmove(t->net[k], t->net[k + 1], (size_t)(t->net_len - k - 1) * KM_MSG);
    t->net_len--;
    memset(t->net[t->net_len], 0, KM_MSG);
}

/* updates.add_messages: the network with m too, kept sorted (a sorted tuple: the slots compare as the messages) */
static void net_add(km_succ *out, km_state *t, const km_msg *m) {
    if (t->net_len >= KM_NET) { out->error = KM_ERR_NETWORK; return; }
    uint8_t slot[KM_MSG];
    msg_encode(m, slot);
    int k = t->net_len;
    while (k > 0 && memcmp(t->net[k - 1], slot, KM_MSG) > 0) k--;
    memmove(t->net[k + 1], t->net[k], (size_t)(t->net_len - k) * KM_MSG);
    memcpy(t->net[k], slot, KM_MSG);
    t->net_len++;
}

static int msg_kind(const km_state *s, int k) { return s->net[k][0] - 2; }

/* -- the log and its epoch cache (log.py) ---------------------------------------------------------------- */
static int latest_epoch(const km_broker *b) { return b->cache_len ? b->cache[b->cache_len - 1][0] : UNDEFINED; }

/* log.assign */
static void assign(km_broker *b, int epoch, int offset, int kafka_7415) {
    int n = b->cache_len;
    if (!kafka_7415) {
        if (n && (epoch <= b->cache[n - 1][0] || offset < b->cache[n - 1][1])) return;
    } else {
        if (n && b->cache[n - 1][0] == epoch && offset >= b->cache[n - 1][1]) return;
        int kept = 0;
        for (int k = 0; k < n; k++)
            if (b->cache[k][0] < epoch && b->cache[k][1] < offset) {
                b->cache[kept][0] = b->cache[k][0];
                b->cache[kept][1] = b->cache[k][1];
                kept++;
            }
        for (int k = kept; k < n; k++) b->cache[k][0] = b->cache[k][1] = 0;
        n = kept;
    }
    b->cache[n][0] = (int8_t)epoch; /* a cache holds distinct epochs 0 .. KM_E: room for KM_E + 1 */
    b->cache[n][1] = (int8_t)offset;
    b->cache_len = (uint8_t)(n + 1);
}

/* log.truncate_cache */
static void truncate_cache(km_broker *b, int offset) {
    while (b->cache_len && b->cache[b->cache_len - 1][1] >= offset) {
        b->cache_len--;
        b->cache[b->cache_len][0] = b->cache[b->cache_len][1] = 0;
    }
}

/* log.cache_after_append */
static void cache_after_append(km_broker *b, int start, int kafka_7415) {
    for (int o = start; o < b->log_len; o++) {
        int epoch = b->log[o][0];
        if (!b->cache_len || epoch != b->cache[b->cache_len - 1][0]) assign(b, epoch, o, kafka_7415);
    }
}

/* log.end_offset_kip101 */
static int end_offset_kip101(const km_broker *b, int requested) {
    int n = b->cache_len;
    if (!n || requested == UNDEFINED) return UNDEFINED;
    if (requested == b->cache[n - 1][0]) return b->log_len;
    if (requested < b->cache[0][0]) return UNDEFINED;
    for (int k = 0; k < n; k++)
        if (b->cache[k][0] > requested) return b->cache[k][1];
    return UNDEFINED;
}

/* log.end_offset_for: (epoch, end offset) */
static void end_offset_for(const km_broker *b, int requested, int kafka_7415, int *epoch, int *end) {
    int n = b->cache_len;
    *epoch = *end = UNDEFINED;
    if (requested == UNDEFINED || !n) return;
    if (b->cache[n - 1][0] == requested) { *epoch = requested; *end = b->log_len; return; }
    int floor = UNDEFINED;
    for (int k = 0; k < n; k++) {
        if (b->cache[k][0] > requested) {
            if (floor == UNDEFINED) {
                if (kafka_7415) { *epoch = requested; *end = b->cache[k][1]; }
                return;
            }
            *epoch = floor; *end = b->cache[k][1];
            return;
        }
        floor = b->cache[k][0];
    }
}

/* log.epoch_start */
static int epoch_start(const km_broker *b, int epoch) {
    for (int k = 0; k < b->cache_len; k++)
        if (b->cache[k][0] == epoch) return b->cache[k][1];
    return b->log_len;
}

/* log.follower_truncation: the offset, and *done */
static int follower_truncation(const km_broker *b, int hw, int leader_epoch, int leader_end, int kafka_7415,
                               int *done) {
    int leo = b->log_len;
    *done = 1;
    if (leader_end == UNDEFINED) return MIN(hw, leo);
    int epoch, end;
    end_offset_for(b, leader_epoch, kafka_7415, &epoch, &end);
    if (end == UNDEFINED) return MIN(leader_end, leo);
    if (epoch != leader_epoch) { *done = 0; return MIN(end, leo); }
    return MIN(MIN(leader_end, end), leo);
}

/* updates.truncate_broker */
static void truncate_broker(km_broker *b, int offset, int clean_cache, int lowers_hw) {
    if (offset >= b->log_len) {
        if (clean_cache) truncate_cache(b, offset);
        return;
    }
    for (int o = offset; o < b->log_len; o++) b->log[o][0] = b->log[o][1] = 0;
    b->log_len = (uint8_t)offset;
    if (lowers_hw) b->hw = (int8_t)MIN(b->hw, offset);
    truncate_cache(b, offset);
}

/* -- truncate-on-fetch (KAFKA-10554, 2.8+; config.truncate_on_fetch and its fixes) ---------------------------------- */

static int has_pending(const km_state *s, int i) { return s->pending[i].source >= 0; }

/* the pending diverging epoch dropped: () */
static void clear_pending(km_state *t, int i) {
    t->pending[i].source = -1;
    t->pending[i].request_epoch = t->pending[i].epoch = t->pending[i].end = 0;
}

/* log.diverging_epoch: 0 not diverged, 1 diverged at (*epoch, *end), 2 LOOKUP_UNDEFINED (the leader cannot look the
   follower's last fetched epoch up: OFFSET_OUT_OF_RANGE) */
#define NOT_DIVERGED 0
#define DIVERGED 1
#define LOOKUP_UNDEFINED 2
static int diverging_epoch(const km_broker *leader, int fetch_offset, int last_epoch, int *epoch, int *end) {
    if (last_epoch == UNDEFINED) return NOT_DIVERGED;
    end_offset_for(leader, last_epoch, 1, epoch, end);
    if (*epoch == UNDEFINED || *end == UNDEFINED) return LOOKUP_UNDEFINED;
    return *epoch < last_epoch || *end < fetch_offset ? DIVERGED : NOT_DIVERGED;
}

/* DataPlaneActions._truncate_on_diverging_action (TruncateOnDivergingEpoch): the follower truncates to its pending
   diverging epoch; with config.kafka_13207 a partition that left the fetcher (or follows another leader) is skipped */
static void truncate_on_diverging_action(const km_state *s, km_succ *out, int i) {
    const km_broker *follower = &s->b[i];
    const km_pending *p = &s->pending[i];
    int in_fetcher = follower->fetch != NO_FETCHER && follower->leader == p->source;
    km_state *t = km_emit(out, s, CODE(A_TRUNCATE_DIVERGING, i, 0));
    clear_pending(t, i);
    if (config.kafka_13207 && !in_fetcher && KM_MUTANT != 2) return;
    int done;
    int offset = follower_truncation(follower, follower->hw, p->epoch, p->end, 1, &done);
    truncate_broker(&t->b[i], offset, config.kafka_10706_fix, config.truncation_lowers_hw);
    if (in_fetcher) t->b[i].fetch = FETCHING;
}

/* -- alter-isr's broker fields (KIP-497; the rules: the AlterIsr section below) ---------------------------------- */

/* a crash or restart: partition_epoch 0, alter_pending false, committed_isr () (actions_control._crashed, _restarted) */
static void clear_alter(km_state *t, int i) {
    t->alter[i].partition_epoch = 0;
    t->alter[i].alter_pending = 0;
    t->alter[i].committed_isr = 0;
}

/* clients.unclean_noted: each consumer's ghost read_before_unclean set to what it has read */
static void unclean_noted(km_state *t) {
#if KM_CONSUMERS
    for (int c = 0; c < KM_CONSUMERS; c++) t->cons[c].read_before_unclean = t->cons[c].consumed_len;
#endif
    (void)t;
}

/* -- the control plane (actions_control.py) ---------------------------------------------------------------- */

/* _elect_state: the controller writes (leader, epoch + 1, isr) and sends a LeaderAndIsr to every live replica */
static void elect_state(km_succ *out, km_state *t, int leader, int isr, int skip) {
    t->c_leader = (int8_t)leader;
    t->c_epoch = (int8_t)(t->c_epoch + 1);
    t->c_isr = (uint8_t)isr;
    if (KM_F_ZOOKEEPER_ALTER_ISR) t->c_partition_epoch = (int8_t)(t->c_partition_epoch + 1); /* the write moves the zkVersion */
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = LEADER_AND_ISR; m.epoch = t->c_epoch; m.leader = leader; m.isr = isr;
    m.partition_epoch = t->c_partition_epoch;
    for (int r = 0; r < KM_N; r++) {
        if (!t->b[r].alive || r == skip) continue;
        m.dst = r; m.broker_epoch = t->registered[r]; m.meant = t->b[r].incarnation;
        net_add(out, t, &m);
    }
}

static int live_members(const km_state *s, int isr) {
    int live = 0;
    for (int r = 0; r < KM_N; r++)
        if (IN(isr, r) && s->b[r].alive) live |= 1 << r;
    return live;
}

/* _broker_failure_actions */
static void broker_failure_actions(const km_state *s, km_succ *out, int i) {
    int isr = s->c_isr, leader = s->c_leader;
    if (!IN(isr, i) && leader != i) {
        km_state *t = km_emit(out, s, CODE(A_BROKER_FAILURE, i, 0));
        t->registered[i] = DEAD;
        return;
    }
    if (s->c_epoch >= KM_E) return;
    int remaining = isr & ~(1 << i);
    if (!remaining && (config.kafka_5642 || !config.unclean)) remaining = isr;
    if (leader == i) {
        int live = live_members(s, remaining);
        for (int b = 0; b < KM_N; b++) {
            if (!IN(live, b)) continue;
            km_state *t = km_emit(out, s, CODE(A_ELECT, b, 0));
            t->registered[i] = DEAD;
            elect_state(out, t, b, live, -1);
        }
        if (!live) {
            km_state *t = km_emit(out, s, CODE(A_BROKER_FAILURE, i, 0));
            t->registered[i] = DEAD;
            elect_state(out, t, NO_LEADER, remaining, -1);
        }
        return;
    }
    km_state *t = km_emit(out, s, CODE(A_BROKER_FAILURE, i, 0));
    t->registered[i] = DEAD;
    elect_state(out, t, leader, remaining, -1);
}

/* _broker_change_state: the registration of a broker that bounced unseen; with detect-bounced-broker (KIP-380) its
   queued control requests are dropped and it is re-elected (its leadership) or sent the current LeaderAndIsr */
static void broker_change(const km_state *s, km_succ *out, int i) {
    km_state *t = km_emit(out, s, CODE(A_BROKER_CHANGE, i, 0));
    t->registered[i] = s->b[i].broker_epoch;
    if (!config.detect_bounced_broker) return;
    for (int k = 0; k < t->net_len;) {
        if (IS_CONTROL(msg_kind(t, k)) && t->net[k][1] - 2 == i) net_remove(t, k);
        else k++;
    }
    if (s->c_leader == i && s->c_epoch < KM_E) {
        elect_state(out, t, i, s->c_isr, -1);
        return;
    }
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = LEADER_AND_ISR; m.dst = i; m.epoch = t->c_epoch; m.leader = t->c_leader; m.isr = t->c_isr;
    m.broker_epoch = t->registered[i]; m.meant = t->b[i].incarnation; m.partition_epoch = t->c_partition_epoch;
    net_add(out, t, &m);
}

/* _controller_actions (ZooKeeperController.actions) */
static void controller_actions(const km_state *s, km_succ *out) {
    for (int b = 0; b < KM_N; b++) {
        const km_broker *br = &s->b[b];
        if (!br->alive && s->registered[b] != DEAD) broker_failure_actions(s, out, b);
        else if (br->alive && s->registered[b] != br->broker_epoch) broker_change(s, out, b);
    }
    if (s->c_epoch >= KM_E) return;
    int leader = s->c_leader;
    int live = live_members(s, s->c_isr);
    if (leader == NO_LEADER) {
        for (int b = 0; b < KM_N; b++)
            if (IN(live, b)) elect_state(out, km_emit(out, s, CODE(A_ELECT, b, 0)), b, live, -1);
        if (config.unclean && !live)
            for (int b = 0; b < KM_N; b++) {
                if (!s->b[b].alive) continue;
                km_state *t = km_emit(out, s, CODE(A_UNCLEAN, b, 0));
                unclean_noted(t);
                elect_state(out, t, b, 1 << b, -1);
            }
    } else if (s->b[leader].alive) {
        for (int b = 0; b < KM_N; b++)
            if (IN(live, b) && b != leader)
                elect_state(out, km_emit(out, s, CODE(A_PREFERRED, b, 0)), b, s->c_isr, -1);
        if (s->bumps < config.bumps) {
            km_state *t = km_emit(out, s, CODE(A_BUMP, leader, 0));
            elect_state(out, t, leader, s->c_isr, -1);
            t->bumps = (int8_t)(s->bumps + 1);
        }
    }
}

/* _crash_state (keep = the LEO: Crash; the kernel does not compile lossy-crash) */
static void crash_broker(km_state *t, int i) {
    km_broker *b = &t->b[i];
    b->alive = 0; b->leader = -1; b->epoch = -1; b->isr = 0; b->fetch = NO_FETCHER;
    b->has_remote = 0; memset(b->remote, 0, sizeof b->remote);
    b->stopping = 0; b->reconciled = -1; b->idle_cause = IDLE_NONE;
    clear_pending(t, i);
    clear_alter(t, i);
#if KM_F_KRAFT /* actions_broker_lifecycle._kraft_crash: the followers' broker epochs too */
    t->k[i].has_remote_epochs = 0; memset(t->k[i].remote_epochs, 0, sizeof t->k[i].remote_epochs);
#endif
    /* its messages are lost: a control request to it and a data message to or from it */
    for (int k = 0; k < t->net_len;) {
        km_msg m;
        msg_decode(t->net[k], &m);
        if (m.kind != CONTROLLED_SHUTDOWN && (m.dst == i || (!IS_CONTROL(m.kind) && m.src == i))) net_remove(t, k);
        else k++;
    }
    t->crashes = (int8_t)(t->crashes + 1);
}

/* _reborn: a new incarnation, its log, epoch cache and HW checkpoint back, a new broker epoch */
static void reborn(km_broker *b) {
    b->hw = (int8_t)MIN(b->hw, b->log_len);
    b->broker_epoch = (int8_t)(b->broker_epoch + 1);
    b->incarnation = (int8_t)(b->incarnation + 1);
    b->alive = 1; b->leader = -1; b->epoch = -1; b->isr = 0; b->fetch = NO_FETCHER;
    b->has_remote = 0; memset(b->remote, 0, sizeof b->remote);
    b->stopping = 0; b->reconciled = -1; b->idle_cause = IDLE_RESTARTED;
}

/* _bounce_state: a crash and re-registration the controller has not processed; broker-to-broker messages lost */
static void bounce_state(const km_state *s, km_succ *out, int i) {
    km_state *t = km_emit(out, s, CODE(A_BOUNCE, i, 0));
    reborn(&t->b[i]);
    clear_pending(t, i);
    clear_alter(t, i);
    for (int k = 0; k < t->net_len;) {
        km_msg m;
        msg_decode(t->net[k], &m);
        if (IS_DATA(m.kind) && (m.dst == i || m.src == i)) net_remove(t, k);
        else k++;
    }
    t->bounces = (int8_t)(s->bounces + 1);
}

/* _restart_state */
static void restart_state(const km_state *s, km_succ *out, int i) {
    km_state *t = km_emit(out, s, CODE(A_RESTART, i, 0));
    km_broker *b = &t->b[i];
    reborn(b);
    clear_pending(t, i);
    clear_alter(t, i);
    t->registered[i] = b->broker_epoch;
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = LEADER_AND_ISR; m.dst = i; m.epoch = t->c_epoch; m.leader = t->c_leader; m.isr = t->c_isr;
    m.broker_epoch = b->broker_epoch; m.meant = b->incarnation; m.partition_epoch = t->c_partition_epoch;
    net_add(out, t, &m);
}

/* _stale_generation */
static int stale_generation(const km_broker *b, const km_msg *m) {
    return config.reject_stale_broker_epoch && m->broker_epoch < b->broker_epoch;
}

/* _restarts_truncation */
static int restarts_truncation(const km_broker *b, const km_msg *m) {
    if (config.leader_epoch_fencing) return 1;
    if (config.kafka_7164) return m->epoch > b->epoch + 1;
    return 0;
}

/* _apply_leader_and_isr (ZooKeeperController.apply_leader_and_isr): t already has the message removed */
static void apply_leader_and_isr(km_state *t, const km_msg *m) {
    int i = m->dst;
    km_broker *b = &t->b[i];
    if (m->epoch <= b->epoch || stale_generation(b, m)) return;
    /* makeFollowers: only when the leader is available (KRaft's applyLocalFollowersDelta calls makeFollower anyway) */
    if (m->leader == NO_LEADER && !KM_F_KRAFT) return;
    int stale = b->stale || m->meant != b->incarnation;
#if KM_F_KRAFT
    int was_leader = b->leader == i;
#endif
    if (m->leader == i) {
        if (config.kafka_7415) assign(b, m->epoch, b->log_len, 1);
        if (b->leader != i) {
            b->has_remote = 1;
            memset(b->remote, -1, sizeof b->remote);
            if (!config.truncation_lowers_hw && b->hw > b->log_len) b->hw = 0; /* new_leader_hw */
        }
        b->leader = (int8_t)i; b->epoch = (int8_t)m->epoch; b->isr = (uint8_t)m->isr;
        b->stale = (uint8_t)stale; b->reconciled = (int8_t)m->epoch;
        b->fetch = NO_FETCHER; b->idle_cause = IDLE_NONE;
    } else if (b->leader == m->leader && b->fetch != NO_FETCHER && !restarts_truncation(b, m)) {
        b->epoch = (int8_t)m->epoch; b->isr = (uint8_t)m->isr; b->stale = (uint8_t)stale;
    } else {
        int fetch;
        if (config.hw_truncation) {
            truncate_broker(b, b->hw, config.kafka_10706_fix, 1);
            fetch = FETCHING;
        } else if (config.uses_offsets_request || !b->cache_len) {
            fetch = TRUNCATING;
        } else {
            fetch = FETCHING;
        }
        b->leader = (int8_t)m->leader; b->epoch = (int8_t)m->epoch; b->isr = (uint8_t)m->isr;
        b->fetch = (uint8_t)fetch; b->stale = (uint8_t)stale;
        b->has_remote = 0; memset(b->remote, 0, sizeof b->remote);
        b->reconciled = -1; b->idle_cause = IDLE_NONE;
    }
#if KM_F_KRAFT
    if (m->leader == i && !was_leader && config.kip_903) { /* KIP-903: a new leader knows no follower's broker epoch */
        t->k[i].has_remote_epochs = 1;
        memset(t->k[i].remote_epochs, -1, sizeof t->k[i].remote_epochs);
    }
    if (m->leader != i && t->k[i].has_remote_epochs) { /* a follower keeps none */
        t->k[i].has_remote_epochs = 0;
        memset(t->k[i].remote_epochs, 0, sizeof t->k[i].remote_epochs);
    }
#endif
    if (KM_VERSIONED) { /* _committed_version (alter_by_request): the partition epoch it carries, a committed ISR (a pending AlterIsr dropped) */
        t->alter[i].partition_epoch = (int8_t)m->partition_epoch;
        t->alter[i].alter_pending = 0;
        t->alter[i].committed_isr = 0;
    }
}

/* _apply_stop_replica: t already has the message removed */
static void apply_stop_replica(km_state *t, const km_msg *m) {
    km_broker *b = &t->b[m->dst];
    if (stale_generation(b, m)) return;
    b->stale = (uint8_t)(b->stale || m->meant != b->incarnation);
    b->fetch = NO_FETCHER;
    b->idle_cause = IDLE_STOPPED;
}

/* _send_stop */
static void send_stop(km_succ *out, km_state *t, int i, int meant) {
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = STOP_REPLICA; m.dst = i; m.epoch = t->c_epoch; m.broker_epoch = t->registered[i]; m.meant = meant;
    net_add(out, t, &m);
}

/* the action table's leader index (the readable model indexes it with the controller's leader, -1 the last) */
#define LEADER_INDEX(l) ((l) < 0 ? KM_N + (l) : (l))

/* _controlled_shutdowns: ProcessControlledShutdown of the oldest request of broker m->src (slot k) */
static void controlled_shutdowns(const km_state *s, km_succ *out, int k, const km_msg *m) {
    int i = m->src, leader = s->c_leader;
#define ACT(l) CODE(A_PROCESS_SHUTDOWN, i, LEADER_INDEX(l))
    if (!s->b[i].alive || (config.reject_stale_shutdown && m->broker_epoch < s->registered[i])) {
        net_remove(km_emit(out, s, ACT(leader)), k);
        return;
    }
    int isr = s->c_isr & ~(1 << i);
    if (leader == i) {
        int others = live_members(s, isr);
        if (!others) { /* nowhere to move leadership: "partitions remaining" */
            net_remove(km_emit(out, s, ACT(i)), k);
            return;
        }
        if (s->c_epoch >= KM_E) return;
        for (int l = 0; l < KM_N; l++) {
            if (!IN(others, l)) continue;
            km_state *t = km_emit(out, s, ACT(l));
            net_remove(t, k);
            elect_state(out, t, l, isr, -1);
            send_stop(out, t, i, m->meant);
        }
    } else if (IN(s->c_isr, i)) {
        if (s->c_epoch >= KM_E) return;
        km_state *t = km_emit(out, s, ACT(leader));
        net_remove(t, k);
        elect_state(out, t, leader, isr, i);
        send_stop(out, t, i, m->meant);
    } else {
        km_state *t = km_emit(out, s, ACT(leader));
        net_remove(t, k);
        send_stop(out, t, i, m->meant);
    }
#undef ACT
}

/* -- the data plane (actions_data.py) ---------------------------------------------------------------------- */

/* busy: a request from follower to leader, or its answer, is in flight */
static int busy(const km_state *s, int follower, int leader) {
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k), src = s->net[k][1] - 2, dst = s->net[k][2] - 2;
        if (kind == FETCH || kind == OFFSETS_FOR_LEADER_EPOCH) {
            if (src == follower && dst == leader) return 1;
        } else if ((kind == FETCH_RESPONSE || kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE) && src == leader &&
                   dst == follower) {
            return 1;
        }
    }
    return 0;
}

/* a ghost set of (offset, epoch, ident) triples (committed, acked) with one added, kept sorted: each record sits at
   the offset it was produced at, so a set holds at most KM_R of them */
static void add_entry(km_succ *out, uint8_t *len, int8_t (*set)[3], int offset, int epoch, int ident) {
    int n = *len, k = 0;
    for (; k < n; k++) {
        int8_t *c = set[k];
        if (c[0] == offset && c[1] == epoch && c[2] == ident) return;
        if (c[0] > offset || (c[0] == offset && (c[1] > epoch || (c[1] == epoch && c[2] > ident)))) break;
    }
    if (n >= KM_LOG) { out->error = KM_ERR_LOG; return; }
    memmove(set[k + 1], set[k], (size_t)(n - k) * 3);
    set[k][0] = (int8_t)offset; set[k][1] = (int8_t)epoch; set[k][2] = (int8_t)ident;
    *len = (uint8_t)(n + 1);
}

static int isr_size(int isr) {
    int n = 0;
    for (int r = 0; r < KM_N; r++) n += IN(isr, r);
    return n;
}

/* the last committed ISR: alter-isr's while an AlterIsr is pending, the ISR otherwise (AllAcks.accepts,
   _advance_hw_action with kafka-15583) */
static int committed_isr(const km_state *s, int i) {
    return s->alter[i].alter_pending ? s->alter[i].committed_isr : s->b[i].isr;
}

/* AllAcks.required (clients.leader_min_isr): with effective-min-isr (3.7.0 Partition.effectiveMinIsr, KAFKA-15583)
   min.insync.replicas capped by the leader's replicas, every broker here (the compiled rows keep no replica list) */
#define KM_REQUIRED_ISR (config.effective_min_isr && KM_N < config.min_isr ? KM_N : config.min_isr)

/* _produce_action; the producer (clients.producer_for): acks=all refuses below min.insync.replicas (AllAcks.accepts),
   acks=1 is told on append (LeaderAcks.appended) */
static void produce_action(const km_state *s, km_succ *out, int i) {
    const km_broker *leader = &s->b[i];
    if (s->produced >= KM_R || (config.acks == -1 && isr_size(committed_isr(s, i)) < KM_REQUIRED_ISR)) return;
    int ident = s->produced + 1, leo = leader->log_len;
    if (leo >= KM_LOG) { out->error = KM_ERR_LOG; return; }
    km_state *t = km_emit(out, s, CODE(A_PRODUCE, i, 0));
    km_broker *b = &t->b[i];
    if (config.epoch_cache) assign(b, leader->epoch, leo, config.kafka_7415);
    b->log[leo][0] = leader->epoch;
    b->log[leo][1] = (int8_t)ident;
    b->log_len = (uint8_t)(leo + 1);
    t->produced = (int8_t)ident;
    if (config.acks == 1) add_entry(out, &t->acked_len, t->acked, leo, leader->epoch, ident);
}

/* _advance_hw_action (hw_events, KAFKA-13091's stale HW, is not compiled) */
static void advance_hw_action(const km_state *s, km_succ *out, int i) {
    const km_broker *leader = &s->b[i];
    /* KAFKA-15583 (3.7.0 maybeIncrementLeaderHW: isUnderMinIsr, the committed ISR against the (effective) min ISR) */
    if (config.kafka_15583 && isr_size(committed_isr(s, i)) < KM_REQUIRED_ISR) return;
    int hw = leader->log_len;
    for (int r = 0; r < KM_N; r++)
        if (IN(leader->isr, r) && r != i && leader->remote[r] < hw) hw = leader->remote[r];
    if (hw <= leader->hw) return;
    km_state *t = km_emit(out, s, CODE(A_ADVANCE, i, 0));
    for (int o = 0; o < hw; o++) add_entry(out, &t->committed_len, t->committed, o, leader->log[o][0], leader->log[o][1]);
    t->b[i].hw = (int8_t)hw;
    if (config.acks == -1 && isr_size(leader->isr) >= KM_REQUIRED_ISR) /* AllAcks.advanced: the leader's epoch's records */
        for (int o = leader->hw; o < hw; o++)
            if (leader->log[o][0] == leader->epoch)
                add_entry(out, &t->acked_len, t->acked, o, leader->log[o][0], leader->log[o][1]);
}

/* _fetch_being_answered */
static int fetch_being_answered(const km_state *s, int i, const km_broker *leader, int f) {
    for (int k = 0; k < s->net_len; k++) {
        if (msg_kind(s, k) != FETCH_RESPONSE) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        if (m.src == i && m.dst == f && m.error == E_NONE && (!config.kafka_13141 || m.diverging_epoch == UNDEFINED) &&
            (!config.leader_epoch_fencing || m.epoch == leader->epoch))
            return 1;
    }
    return 0;
}

/* _with_isr: the leader's ISR change written to ZooKeeper (Partition.updateIsr) */
static void with_isr(const km_state *s, km_succ *out, uint32_t code, int i, int isr) {
    km_state *t = km_emit(out, s, code);
    t->b[i].isr = (uint8_t)isr;
    t->c_isr = (uint8_t)isr;
}

/* _isr_change_action */
static void isr_change_action(const km_state *s, km_succ *out, int i, int f) {
    const km_broker *leader = &s->b[i];
    int isr = leader->isr;
    if (IN(isr, f)) {
        if (config.kafka_7152 && leader->remote[f] == leader->log_len) return;
        with_isr(s, out, CODE(A_SHRINK, i, f), i, isr & ~(1 << f));
        return;
    }
    int fetched = leader->remote[f];
    if (fetched < 0 || fetched < leader->hw) return;
    if (config.kafka_7128 && fetched < epoch_start(leader, leader->epoch)) return;
    if (!fetch_being_answered(s, i, leader, f) && KM_MUTANT != 1) return;
    with_isr(s, out, CODE(A_EXPAND, i, f), i, isr | 1 << f);
}

/* _leader_actions (ZooKeeperController.leader_actions) */
#if KM_F_KRAFT
static void kraft_alter_leader_actions(const km_state *s, km_succ *out, int i);
#endif

static void leader_actions(const km_state *s, km_succ *out, int i) {
#if KM_F_KRAFT /* KRaftController.leader_actions: _alter_leader_actions */
    kraft_alter_leader_actions(s, out, i);
    return;
#endif
    produce_action(s, out, i);
    advance_hw_action(s, out, i);
    if (s->c_leader != i || s->c_epoch != s->b[i].epoch) return;
    for (int f = 0; f < KM_N; f++)
        if (f != i) isr_change_action(s, out, i, f);
}

/* -- AlterIsr (KIP-497, 2.7.0+ ZooKeeper rows; KM_F_ZOOKEEPER_ALTER_ISR): actions_alter_partition.py (the leader's request),
   actions_alter_isr.py (the ZooKeeper controller's answer, the leader's handling of it) --------------------------- */
#define CONTROLLER (-1) /* actions_alter_partition.CONTROLLER: the src or dst of a message to or from the controller */

/* _alter_in_flight: an AlterIsr of the leader or its answer is in flight */
static int alter_in_flight(const km_state *s, int leader) {
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k), src = s->net[k][1] - 2, dst = s->net[k][2] - 2;
        if ((kind == ALTER_PARTITION && src == leader) || (kind == ALTER_PARTITION_RESPONSE && dst == leader)) return 1;
    }
    return 0;
}

/* an AlterIsr from leader i with its zkVersion, proposing isr; on a ZooKeeper row only the sender's broker epoch is
   set (AlterIsrRequestData.brokerEpoch) */
static void send_alter_isr(km_succ *out, km_state *t, int i, int isr) {
    const km_broker *b = &t->b[i];
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = ALTER_PARTITION; m.src = i; m.dst = CONTROLLER; m.epoch = b->epoch;
    m.partition_epoch = t->alter[i].partition_epoch; m.isr = isr;
    for (int r = 0; r < KM_N; r++) m.broker_epochs[r] = r == i ? b->broker_epoch : UNDEFINED;
    net_add(out, t, &m);
}

/* AlterPartitionActions._isr_change_request_action (ZooKeeper rows: no eligibility check) */
static void isr_change_request_action(const km_state *s, km_succ *out, int i, int f) {
    const km_broker *leader = &s->b[i];
    int isr = leader->isr, proposed, maximal;
    uint32_t code;
    if (IN(isr, f)) {
        if (config.kafka_7152 && leader->remote[f] == leader->log_len) return;
        proposed = isr & ~(1 << f); maximal = isr; code = CODE(A_SHRINK, i, f);
    } else {
        int fetched = leader->remote[f];
        if (fetched < 0 || fetched < leader->hw) return;
        if (config.kafka_7128 && fetched < epoch_start(leader, leader->epoch)) return;
        if (!fetch_being_answered(s, i, leader, f)) return;
        proposed = maximal = isr | 1 << f; code = CODE(A_EXPAND, i, f);
    }
    km_state *t = km_emit(out, s, code);
    send_alter_isr(out, t, i, proposed);
    t->b[i].isr = (uint8_t)maximal;
    t->alter[i].alter_pending = 1;
    t->alter[i].committed_isr = (uint8_t)isr;
    t->alters = (int8_t)(s->alters + 1);
}

/* AlterPartitionActions._alter_leader_actions: produce, the HW, and one ISR change at a time by request */
static void alter_leader_actions(const km_state *s, km_succ *out, int i) {
    produce_action(s, out, i);
    advance_hw_action(s, out, i);
    if (s->alter[i].alter_pending || s->alters >= config.alters || alter_in_flight(s, i)) return;
    for (int f = 0; f < KM_N; f++)
        if (f != i) isr_change_request_action(s, out, i, f);
}

/* actions_alter_isr._zookeeper_live: the controller counts broker r live (its death not processed, not in controlled
   shutdown: a ControlledShutdown of its incarnation still in flight counts as not yet processed) */
static int zookeeper_live(const km_state *s, int r) {
    if (s->registered[r] == DEAD) return 0;
    const km_broker *b = &s->b[r];
    if (!b->alive || !b->stopping) return 1;
    for (int k = 0; k < s->net_len; k++) {
        if (msg_kind(s, k) != CONTROLLED_SHUTDOWN) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        if (m.src == r && m.meant == b->incarnation) return 1;
    }
    return 0;
}

/* AlterIsrActions._process_alter_isr (slot k holds m) */
static void process_alter_isr(const km_state *s, km_succ *out, int k, const km_msg *m) {
    km_state *t = km_emit(out, s, CODE(A_PROCESS_ALTER, m->src, 0));
    net_remove(t, k);
    km_msg r;
    memset(&r, 0, sizeof r);
    r.kind = ALTER_PARTITION_RESPONSE; r.src = CONTROLLER; r.dst = m->src; r.epoch = m->epoch;
    r.partition_epoch = m->partition_epoch;
    int error = E_NONE;
    if (m->broker_epochs[m->src] != s->registered[m->src]) {
        error = E_STALE_BROKER_EPOCH;
    } else if (m->epoch < s->c_epoch) {
        error = E_FENCED_LEADER_EPOCH;
    } else if (m->src == s->c_leader && m->epoch == s->c_epoch && m->isr == s->c_isr) {
        r.error = E_NONE; r.isr = s->c_isr; r.new_epoch = s->c_epoch; r.new_partition_epoch = s->c_partition_epoch;
        net_add(out, t, &r); /* already written: answered with the current state */
        return;
    } else if (m->partition_epoch != s->c_partition_epoch) {
        error = E_INVALID_UPDATE_VERSION;
    } else if (config.kafka_14140 && KM_MUTANT != 4) {
        for (int b = 0; b < KM_N; b++)
            if (IN(m->isr, b) && !zookeeper_live(s, b)) error = E_INELIGIBLE_REPLICA;
    }
    if (error != E_NONE) {
        r.error = error; r.isr = error == E_STALE_BROKER_EPOCH ? m->isr : 0;
        r.new_epoch = r.new_partition_epoch = UNDEFINED;
        net_add(out, t, &r);
        return;
    }
    t->c_isr = (uint8_t)m->isr;
    t->c_partition_epoch = (int8_t)(s->c_partition_epoch + 1);
    if (s->alter_losses < config.alter_losses) { /* _lose_alter_response: written, the answer lost, the request again */
        km_state *u = km_emit(out, t, CODE(A_LOSE_ALTER, m->src, 0)); /* after t, before t's answer is added */
        net_add(out, u, m);
        u->alter_losses = (int8_t)(s->alter_losses + 1);
    }
    r.error = E_NONE; r.isr = m->isr; r.new_epoch = s->c_epoch; r.new_partition_epoch = t->c_partition_epoch;
    net_add(out, t, &r);
}

/* actions_alter_partition.answers_pending: the answer is to the AlterIsr the leader still waits for */
static int answers_pending(const km_state *s, int i, const km_msg *m) {
    return s->alter[i].alter_pending && s->b[i].epoch == m->epoch && s->alter[i].partition_epoch == m->partition_epoch;
}

/* AlterIsrActions._receive_alter_isr_response (slot k holds m; hw_events, KAFKA-13091's stale HW, is not compiled) */
static void receive_alter_isr_response(const km_state *s, km_succ *out, int k, const km_msg *m) {
    int i = m->dst;
    km_state *t = km_emit(out, s, CODE(A_RECEIVE_ALTER, i, 0));
    net_remove(t, k);
    if (!answers_pending(s, i, m)) return;
    km_alter *a = &t->alter[i];
    if (m->error == E_NONE && m->new_epoch == s->b[i].epoch && m->new_partition_epoch > a->partition_epoch) {
        t->b[i].isr = (uint8_t)m->isr; /* committed */
        a->alter_pending = 0; a->committed_isr = 0; a->partition_epoch = (int8_t)m->new_partition_epoch;
    } else if (m->error == E_INELIGIBLE_REPLICA) { /* KAFKA-14140: back to the last committed ISR */
        t->b[i].isr = a->committed_isr;
        a->alter_pending = 0; a->committed_isr = 0;
    } else if (m->error == E_STALE_BROKER_EPOCH && KM_MUTANT != 5) { /* the item stays queued: sent again */
        send_alter_isr(out, t, i, m->isr);
    }
}

/* AlterIsrActions._alter_isr_deliveries */
static void alter_isr_deliveries(const km_state *s, km_succ *out) {
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k);
        if (kind != ALTER_PARTITION && kind != ALTER_PARTITION_RESPONSE) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        if (kind == ALTER_PARTITION) process_alter_isr(s, out, k, &m);
        else receive_alter_isr_response(s, out, k, &m);
    }
}

/* in_flight: broker-to-broker requests and responses in flight (what the bound inflight counts) */
static int in_flight(const km_state *s) {
    int n = 0;
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k);
        n += kind >= FETCH && kind <= OFFSETS_FOR_LEADER_EPOCH_RESPONSE;
    }
    return n;
}

/* _follower_actions */
static void follower_actions(const km_state *s, km_succ *out, int i) {
    const km_broker *follower = &s->b[i];
    int leader = follower->leader;
    if (follower->fetch == NO_FETCHER || has_pending(s, i) || busy(s, i, leader)) return;
    if (config.inflight && in_flight(s) >= config.inflight) return;
    km_msg m;
    memset(&m, 0, sizeof m);
    m.src = i; m.dst = leader;
    m.epoch = config.leader_epoch_fencing ? follower->epoch : UNDEFINED; /* KIP-320: currentLeaderEpoch */
    if (follower->fetch == FETCHING) {
        m.kind = FETCH; m.offset = follower->log_len;
        m.last_epoch = config.truncate_on_fetch ? latest_epoch(follower) : UNDEFINED; /* KAFKA-10554: lastFetchedEpoch */
        /* KIP-903 on KRaft (fetch_carries_broker_epoch): the follower's broker epoch */
        m.broker_epoch = config.fetch_carries_broker_epoch ? follower->broker_epoch : UNDEFINED;
        km_state *t = km_emit(out, s, CODE(A_SEND_FETCH, i, leader));
        net_add(out, t, &m);
    } else if ((follower->fetch == TRUNCATING || follower->fetch == TRUNCATING_AGAIN) && follower->cache_len) {
        m.kind = OFFSETS_FOR_LEADER_EPOCH; m.requested = latest_epoch(follower);
        km_state *t = km_emit(out, s, CODE(A_SEND_OFFSETS, i, leader));
        net_add(out, t, &m);
    }
}

/* KafkaModel._replica_actions */
static void replica_actions(const km_state *s, km_succ *out, int i) {
    const km_broker *b = &s->b[i];
    int leader = b->leader;
    if (config.truncate_on_fetch && has_pending(s, i)) truncate_on_diverging_action(s, out, i);
    if (leader == i && KM_F_ZOOKEEPER_ALTER_ISR) alter_leader_actions(s, out, i); /* AlterIsrController.leader_actions */
    else if (leader == i) leader_actions(s, out, i);
    else if (leader >= 0 && s->b[leader].alive) follower_actions(s, out, i);
    if (b->fetch == TRUNCATING && !b->cache_len && leader != i && !busy(s, i, leader)) {
        km_state *t = km_emit(out, s, CODE(A_TRUNC_HW, i, 0));
        truncate_broker(&t->b[i], b->hw, config.kafka_10706_fix, 1);
        t->b[i].fetch = FETCHING;
    }
}

/* _zookeeper_broker_actions (lossy-crash is not compiled) */
static void broker_actions(const km_state *s, km_succ *out, int i) {
    const km_broker *b = &s->b[i];
    if (!b->alive) {
        if (s->registered[i] == DEAD && s->crashes <= config.crashes) restart_state(s, out, i);
        return;
    }
    replica_actions(s, out, i);
    if (s->shutdowns < config.shutdowns && !b->stopping) { /* ControlledShutdown: the broker asks to shut down */
        km_state *t = km_emit(out, s, CODE(A_SHUTDOWN, i, 0));
        t->b[i].stopping = 1;
        km_msg m;
        memset(&m, 0, sizeof m);
        m.kind = CONTROLLED_SHUTDOWN; m.src = i; m.broker_epoch = b->broker_epoch; m.meant = b->incarnation;
        net_add(out, t, &m);
        t->shutdowns = (int8_t)(s->shutdowns + 1);
    }
    if (s->crashes < config.crashes) crash_broker(km_emit(out, s, CODE(A_CRASH, i, 0)), i);
    if (s->bounces < config.bounces) bounce_state(s, out, i);
}

/* _error: the leader's check of a request */
static int request_error(const km_broker *leader, int i, int request_epoch) {
    if (config.leader_epoch_fencing) {
        if (request_epoch < leader->epoch) return E_FENCED_LEADER_EPOCH;
        if (request_epoch > leader->epoch) return E_UNKNOWN_LEADER_EPOCH;
    }
    if (leader->leader != i) return E_NOT_LEADER;
    return E_NONE;
}

/* _serve_fetch_state (no reassignment); with config.truncate_on_fetch the leader checks the last fetched epoch */
static void serve_fetch(const km_state *s, km_succ *out, int k, const km_msg *m) {
    int i = m->dst, f = m->src;
    const km_broker *leader = &s->b[i];
    km_state *t = km_emit(out, s, CODE(A_SERVE_FETCH, i, f));
    net_remove(t, k);
    km_msg r;
    memset(&r, 0, sizeof r);
    r.kind = FETCH_RESPONSE; r.src = i; r.dst = f; r.epoch = m->epoch; r.offset = m->offset;
    r.diverging_epoch = r.diverging_offset = UNDEFINED;
    int error = request_error(leader, i, m->epoch);
    if (error != E_NONE) {
        r.error = error; r.hw = UNDEFINED;
        if (!config.kafka_8400 && leader->leader == i && leader->remote[f] != -1) t->b[i].remote[f] = -1;
        net_add(out, t, &r);
        return;
    }
    int leo = leader->log_len;
    int divergence = NOT_DIVERGED, epoch = UNDEFINED, end = UNDEFINED;
    if (config.truncate_on_fetch) divergence = diverging_epoch(leader, m->offset, m->last_epoch, &epoch, &end);
    if (divergence == DIVERGED) { /* no records, the diverging epoch */
        r.error = E_NONE; r.hw = leader->hw; r.diverging_epoch = epoch; r.diverging_offset = end;
        if (!config.kafka_13141) t->b[i].remote[f] = (int8_t)m->offset; /* _recorded, also beyond its LEO */
        net_add(out, t, &r);
        return;
    }
    if (m->offset > leo || divergence == LOOKUP_UNDEFINED) { /* _answered_out_of_range */
        r.error = E_OFFSET_OUT_OF_RANGE; r.hw = leo;
        if (!config.kafka_8400 && leader->remote[f] != -1) t->b[i].remote[f] = -1;
        net_add(out, t, &r);
        return;
    }
    t->b[i].remote[f] = (int8_t)m->offset; /* _recorded */
#if KM_F_KRAFT /* KIP-903 (fetch_carries_broker_epoch): the follower's broker epoch recorded with its fetch offset */
    if (config.fetch_carries_broker_epoch && t->k[i].has_remote_epochs && t->k[i].remote_epochs[f] != m->broker_epoch)
        t->k[i].remote_epochs[f] = (int8_t)m->broker_epoch;
#endif
    r.error = E_NONE; r.hw = leader->hw;
    r.nrec = leo - m->offset;
    for (int o = m->offset; o < leo; o++) {
        r.rec[o - m->offset][0] = leader->log[o][0];
        r.rec[o - m->offset][1] = leader->log[o][1];
    }
    net_add(out, t, &r);
}

/* _serve_offsets_state */
static void serve_offsets(const km_state *s, km_succ *out, int k, const km_msg *m) {
    int i = m->dst, f = m->src;
    const km_broker *leader = &s->b[i];
    km_state *t = km_emit(out, s, CODE(A_SERVE_OFFSETS, i, f));
    net_remove(t, k);
    km_msg r;
    memset(&r, 0, sizeof r);
    r.kind = OFFSETS_FOR_LEADER_EPOCH_RESPONSE; r.src = i; r.dst = f; r.epoch = m->epoch; r.requested = m->requested;
    r.error = request_error(leader, i, m->epoch);
    if (r.error != E_NONE) {
        r.answer_epoch = r.end_offset = UNDEFINED;
    } else if (config.epoch_in_response) {
        end_offset_for(leader, m->requested, config.kafka_7415, &r.answer_epoch, &r.end_offset);
    } else {
        r.answer_epoch = UNDEFINED;
        r.end_offset = end_offset_kip101(leader, m->requested);
    }
    net_add(out, t, &r);
}

/* _removes_on_fenced */
static int removes_on_fenced(int request_epoch, const km_broker *follower) {
    if (!config.removes_fenced_partition) return 0;
    return !config.kafka_9654 || request_epoch == follower->epoch;
}

/* _receive_fetch_state, applied to t (the message already removed) */
static void receive_fetch(km_succ *out, km_state *t, const km_msg *m) {
    int i = m->dst;
    km_broker *follower = &t->b[i];
    int leo = follower->log_len;
    int truncating = follower->fetch == TRUNCATING || follower->fetch == TRUNCATING_AGAIN;
    if (follower->fetch != FETCHING && !(truncating && !config.kafka_5163)) return;
    if (follower->leader != m->src || leo != m->offset) return;
    if (config.kafka_18991 && m->epoch != follower->epoch) return;
    if (m->error == E_NONE && m->diverging_epoch == UNDEFINED && m->diverging_offset == UNDEFINED) {
        if (leo + m->nrec > KM_LOG) { out->error = KM_ERR_LOG; return; }
        if (truncating) {
            if (!m->nrec) {
                follower->hw = (int8_t)MIN(m->hw, leo);
                return;
            }
            follower->fetch = FETCHING;
        }
        for (int k = 0; k < m->nrec; k++) {
            follower->log[leo + k][0] = m->rec[k][0];
            follower->log[leo + k][1] = m->rec[k][1];
        }
        follower->log_len = (uint8_t)(leo + m->nrec);
        if (config.epoch_cache) cache_after_append(follower, leo, config.kafka_7415);
        follower->hw = (int8_t)MIN(m->hw, follower->log_len);
        follower->reconciled = follower->epoch;
    } else if (m->error == E_NONE) { /* a diverging epoch, noted (truncate-on-fetch) */
        km_pending *p = &t->pending[i];
        p->source = (int8_t)m->src; p->request_epoch = (int8_t)m->epoch;
        p->epoch = (int8_t)m->diverging_epoch; p->end = (int8_t)m->diverging_offset;
        if (!config.kafka_14704 || KM_MUTANT == 3) follower->hw = (int8_t)MIN(m->hw, leo); /* before KAFKA-14704's fix */
    } else if (m->error == E_OFFSET_OUT_OF_RANGE && m->hw < leo) {
        if (!config.kafka_7414 && !config.unclean) {
            crash_broker(t, i); /* before 2.0.1 a follower ahead of its leader halts */
            return;
        }
        truncate_broker(follower, m->hw, config.kafka_10706_fix, config.truncation_lowers_hw);
        if (truncating) follower->fetch = FETCHING;
    } else if (m->error == E_FENCED_LEADER_EPOCH && removes_on_fenced(m->epoch, follower)) {
        follower->fetch = NO_FETCHER;
        follower->idle_cause = IDLE_FENCED;
    }
}

/* _receive_offsets_state, applied to t (the message already removed) */
static void receive_offsets(km_state *t, const km_msg *m) {
    int i = m->dst;
    km_broker *follower = &t->b[i];
    if ((follower->fetch != TRUNCATING && follower->fetch != TRUNCATING_AGAIN) || follower->leader != m->src) return;
    if (config.checks_offsets_answer_epoch && m->epoch != follower->epoch) return;
    int leo = follower->log_len, done = 1, offset;
    if (m->error != E_NONE) {
        if (m->error == E_FENCED_LEADER_EPOCH && removes_on_fenced(m->epoch, follower)) {
            follower->fetch = NO_FETCHER;
            follower->idle_cause = IDLE_FENCED;
        }
        return;
    }
    if (config.epoch_in_response) {
        int at_leo = follower->fetch == TRUNCATING_AGAIN || !config.kafka_5163;
        int fetch_offset = at_leo ? leo : follower->hw;
        offset = follower_truncation(follower, fetch_offset, m->answer_epoch, m->end_offset, config.kafka_7415, &done);
    } else if (m->end_offset == UNDEFINED) {
        offset = follower->hw;
    } else {
        offset = MIN(m->end_offset, leo);
    }
    truncate_broker(follower, offset, config.kafka_10706_fix, config.truncation_lowers_hw);
    follower->fetch = done ? FETCHING : TRUNCATING_AGAIN;
}

#if KM_F_KRAFT
/* -- the KRaft control plane (controllers.py KRaftController: actions_kraft.py, actions_broker_lifecycle.py,
   actions_alter_partition.py), the rows kraft-3.3 to kraft-4.1 without reassignments (spec/kafka/kernel.py
   KRAFT_UNCOMPILED_BOUNDS refuses them) ---------------------------------------------------------------------- */

/* actions_kraft._unfenced: registered, not fenced, not in controlled shutdown */
static int unfenced(const km_state *s, int b) { return s->registered[b] != DEAD && !s->b[b].stopping; }

/* actions_kraft._controller_min_isr: with effective-min-isr capped by the replicas (every broker: no reassignment) */
#define KM_CONTROLLER_MIN_ISR (config.effective_min_isr && KM_N < config.min_isr ? KM_N : config.min_isr)

/* a successor the readable model does not emit (a partition change beyond the epoch bound): taken back */
static void retract(km_succ *out) { out->n--; }

/* actions_kraft._partition_change (no reassignment): the change built on t, which holds the readable model's s and
   becomes its successor; 0 beyond the epoch bound (the caller retracts t). unclean_replica, restarted: -1 none */
static int partition_change(km_succ *out, km_state *t, int leader, int isr, int bump, int unclean_replica,
                            int restarted, int unclean) {
    int elr = t->c_elr;
    if (config.kip_966_elr) { /* maybePopulateTargetElr */
        if (isr_size(isr) >= KM_CONTROLLER_MIN_ISR) {
            elr = 0;
        } else {
            elr = (t->c_elr | t->c_isr) & ~isr;
            if (unclean_replica >= 0) elr &= ~(1 << unclean_replica);
            if (leader >= 0) elr &= ~(1 << leader);
        }
        if (unclean && config.unclean_election_clears_elr) elr = 0;
        /* elr-filtered-by-replicas keeps every replica while no reassignment changed them */
    }
    int shrink = (t->c_isr & ~isr) != 0;
    int new_epoch = t->c_epoch;
    if (leader != t->c_leader || bump || (shrink && !config.kafka_15021)) new_epoch++;
    if (new_epoch > KM_E) return 0;
    int every = new_epoch != t->c_epoch; /* a new leader epoch is replayed by every live broker, else by the leader */
    t->c_leader = (int8_t)leader; t->c_epoch = (int8_t)new_epoch; t->c_isr = (uint8_t)isr;
    t->c_partition_epoch = (int8_t)(t->c_partition_epoch + 1); t->c_elr = (uint8_t)elr;
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = LEADER_AND_ISR; m.epoch = new_epoch; m.leader = leader; m.isr = isr;
    m.partition_epoch = t->c_partition_epoch;
    for (int r = 0; r < KM_N; r++) {
        int to = every || r == leader || r == restarted;
        if (!to || !t->b[r].alive) continue;
        m.dst = r; m.broker_epoch = t->b[r].broker_epoch; m.meant = t->b[r].incarnation;
        net_add(out, t, &m);
    }
    return 1;
}

/* actions_kraft._candidates: unfenced ISR members; with kip-966-elr unfenced ELR members when the ISR is empty */
static int candidates(const km_state *s, int isr, int elr, int excluded) {
    int found = 0;
    for (int r = 0; r < KM_N; r++)
        if (IN(isr, r) && r != excluded && unfenced(s, r)) found |= 1 << r;
    if (!found && !isr && config.kip_966_elr)
        for (int r = 0; r < KM_N; r++)
            if (IN(elr, r) && r != excluded && unfenced(s, r)) found |= 1 << r;
    return found;
}

/* a successor by code whose partition change is (leader, isr); retracted beyond the epoch bound */
static km_state *changed(const km_state *s, km_succ *out, uint32_t code, int leader, int isr, int bump) {
    km_state *t = km_emit(out, s, code);
    if (partition_change(out, t, leader, isr, bump, -1, -1, 0)) return t;
    retract(out);
    return 0;
}

/* actions_kraft._fence_actions (running: _fence_running_actions, bound fences); kind: A_FENCE, or A_CLEAN_SHUTDOWN
   (_clean_shutdown_actions names FenceBroker's successors by its own table) */
static void fence_actions(const km_state *s, km_succ *out, int i, int running, int kind) {
    km_state fenced = *s;
    fenced.registered[i] = DEAD;
    if (running) fenced.fences = (int8_t)(s->fences + 1);
    int c_isr = s->c_isr, leader = s->c_leader;
#define ACT(l) CODE(kind, i, (l) + 1)
    if (!IN(c_isr, i) && leader != i) {
        km_emit(out, &fenced, ACT(leader));
        return;
    }
    int isr = c_isr & ~(1 << i);
    if (!isr && !config.kip_966_elr) isr = c_isr; /* PartitionChangeBuilder.build writes no empty ISR */
    if (leader == i || leader == NO_LEADER) {
        int elr_after = s->c_elr;
        if (config.kip_966_elr && isr_size(isr) < KM_CONTROLLER_MIN_ISR) elr_after = (s->c_elr | c_isr) & ~isr;
        int found = candidates(&fenced, isr, elr_after, i);
        if (found) {
            for (int b = 0; b < KM_N; b++)
                if (IN(found, b)) changed(&fenced, out, ACT(b), b, IN(isr, b) ? isr : 1 << b, 0);
            return;
        }
        changed(&fenced, out, ACT(NO_LEADER), NO_LEADER, isr, 0);
    } else {
        changed(&fenced, out, ACT(leader), leader, isr, 0);
    }
#undef ACT
}

/* actions_kraft._unfence_actions */
static void unfence_actions(const km_state *s, km_succ *out, int i) {
    km_state up = *s;
    up.registered[i] = s->b[i].broker_epoch;
    int found = s->c_leader == NO_LEADER ? candidates(&up, s->c_isr, s->c_elr, -1) : 0;
    if (!found) {
        km_emit(out, &up, CODE(A_UNFENCE, i, s->c_leader + 1));
        return;
    }
    for (int r = 0; r < KM_N; r++)
        if (IN(found, r)) changed(&up, out, CODE(A_UNFENCE, i, r + 1), r, IN(s->c_isr, r) ? s->c_isr : 1 << r, 0);
}

/* actions_kraft._kraft_controller_actions (KRaftController.actions) */
static void kraft_controller_actions(const km_state *s, km_succ *out) {
    for (int b = 0; b < KM_N; b++) {
        if (!s->b[b].alive && s->registered[b] != DEAD) fence_actions(s, out, b, 0, A_FENCE);
        else if (s->registered[b] != DEAD) {
            if (s->fences < config.fences) fence_actions(s, out, b, 1, A_FENCE);
        } else if (s->b[b].alive) unfence_actions(s, out, b);
    }
    int leader = s->c_leader, isr = s->c_isr;
    if (leader == NO_LEADER) {
        int found = candidates(s, isr, s->c_elr, -1);
        for (int b = 0; b < KM_N; b++) /* _elect_from: an ELR member becomes the ISR */
            if (IN(found, b)) changed(s, out, CODE(A_ELECT, b, 0), b, IN(isr, b) ? isr : 1 << b, 0);
        if (config.unclean && !found)
            for (int b = 0; b < KM_N; b++) {
                if (!unfenced(s, b)) continue;
                km_state *t = km_emit(out, s, CODE(A_UNCLEAN, b, 0));
                unclean_noted(t);
                if (!partition_change(out, t, b, 1 << b, 0, -1, -1, 1)) retract(out);
            }
    } else if (s->b[leader].alive && unfenced(s, leader)) {
        for (int b = 0; b < KM_N; b++)
            if (IN(isr, b) && b != leader && unfenced(s, b)) changed(s, out, CODE(A_PREFERRED, b, 0), b, isr, 0);
        if (s->bumps < config.bumps) {
            km_state *t = changed(s, out, CODE(A_BUMP, leader, 0), leader, isr, 1);
            if (t) t->bumps = (int8_t)(s->bumps + 1);
        }
    }
}

/* actions_broker_lifecycle._kraft_restart_state (no reassignment: the broker hosts the partition) */
static void kraft_restart(const km_state *s, km_succ *out, int i) {
    int clean = !s->b[i].alive && s->b[i].stopping; /* its clean shutdown file holds the registered broker epoch */
    km_state *t = km_emit(out, s, CODE(A_RESTART, i, 0));
    reborn(&t->b[i]);
    clear_pending(t, i);
    clear_alter(t, i);
    t->registered[i] = t->b[i].broker_epoch;
    int unclean = !(clean && config.kafka_18635);
    if (config.detects_unclean_shutdown && unclean && (IN(t->c_isr, i) || IN(t->c_elr, i))) {
        /* handleBrokerUncleanShutdown: out of the ISR and the ELR, the change replayed by the restarted broker too */
        int isr = t->c_isr & ~(1 << i);
        t->c_elr = (uint8_t)(t->c_elr & ~(1 << i));
        if (!partition_change(out, t, t->c_leader != i ? t->c_leader : NO_LEADER, isr, 0, i, i, 0)) retract(out);
        return;
    }
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = LEADER_AND_ISR; m.dst = i; m.epoch = t->c_epoch; m.leader = t->c_leader; m.isr = t->c_isr;
    m.broker_epoch = t->b[i].broker_epoch; m.meant = t->b[i].incarnation; m.partition_epoch = t->c_partition_epoch;
    net_add(out, t, &m);
}

/* actions_broker_lifecycle._kraft_crash: _crash_state keeping keep records (Log.truncateTo, the HW clamped), the
   KRaft in-memory state with it (crash_broker) */
static km_state *kraft_crash(const km_state *s, km_succ *out, uint32_t code, int i, int keep) {
    km_state *t = km_emit(out, s, code);
    truncate_broker(&t->b[i], keep, 0, 1);
    crash_broker(t, i);
    return t;
}

/* actions_broker_lifecycle._controlled_shutdown_actions: ProcessControlledShutdown of the leader (KIP-841's
   shutting-down half): out of the ISR, leadership to an active ISR (or ELR) member, else offline */
static void kraft_controlled_shutdown(const km_state *s, km_succ *out, int i) {
    if (s->registered[i] == DEAD) return; /* a fenced broker's heartbeat is refused */
    km_state shutting = *s;
    shutting.b[i].stopping = 1;
    shutting.shutdowns = (int8_t)(s->shutdowns + 1);
    int isr = s->c_isr & ~(1 << i);
    if (!isr && !config.kip_966_elr) isr = s->c_isr;
    int elr_after = s->c_elr;
    if (config.kip_966_elr && isr_size(isr) < KM_CONTROLLER_MIN_ISR) elr_after = (s->c_elr | s->c_isr) & ~isr;
    int found = candidates(&shutting, isr, elr_after, i);
    for (int r = 0; r < KM_N; r++)
        if (IN(found, r)) changed(&shutting, out, CODE(A_KRAFT_SHUTDOWN, i, r + 1), r, IN(isr, r) ? isr : 1 << r, 0);
    if (!found) changed(&shutting, out, CODE(A_KRAFT_SHUTDOWN, i, 0), NO_LEADER, isr, 0);
}

/* actions_broker_lifecycle._clean_shutdown_actions: CleanShutdown of a broker that leads nothing (SHUTDOWN_NOW:
   fenced, its clean shutdown file written: dead with stopping); a fenced running broker with
   fenced-broker-clean-shutdown writes no partition change */
static void kraft_clean_shutdown(const km_state *s, km_succ *out, int i) {
    int fenced = s->registered[i] == DEAD;
    if (fenced && !config.fenced_broker_clean_shutdown) return; /* without the flag its shutdown is a Crash */
    if (s->c_leader == i) return;                              /* a leader is moved first */
    km_state stopped = *s;
    truncate_broker(&stopped.b[i], s->b[i].log_len, 0, 1);
    crash_broker(&stopped, i);
    stopped.b[i].stopping = 1;
    stopped.crashes = s->crashes;
    stopped.clean_shutdowns = (int8_t)(s->clean_shutdowns + 1);
    if (fenced) {
        km_emit(out, &stopped, CODE(A_CLEAN_SHUTDOWN, i, s->c_leader + 1));
        return;
    }
    fence_actions(&stopped, out, i, 0, A_CLEAN_SHUTDOWN);
}

/* actions_broker_lifecycle._kraft_broker_actions (KRaftController.broker_actions) */
static void kraft_broker_actions(const km_state *s, km_succ *out, int i) {
    const km_broker *b = &s->b[i];
    if (!b->alive) {
        if (s->registered[i] == DEAD) kraft_restart(s, out, i); /* re-registration waits for the session to expire */
        return;
    }
    replica_actions(s, out, i);
    if (s->shutdowns < config.shutdowns && !b->stopping && s->c_leader == i) kraft_controlled_shutdown(s, out, i);
    if (s->clean_shutdowns < config.clean_shutdowns) kraft_clean_shutdown(s, out, i);
    if (s->crashes < config.crashes) kraft_crash(s, out, CODE(A_CRASH, i, 0), i, b->log_len);
    if (s->unclean_shutdowns < config.unclean_shutdowns)
        for (int keep = 0; keep < b->log_len; keep++) {
            km_state *t = kraft_crash(s, out, CODE(A_UNCLEAN_SHUTDOWN, i, keep), i, keep);
            t->crashes = s->crashes;
            t->unclean_shutdowns = (int8_t)(s->unclean_shutdowns + 1);
        }
}

/* actions_kraft._kraft_apply_leader_and_isr (KRaftController.apply_leader_and_isr): t is s with m removed */
static void kraft_apply_leader_and_isr(const km_state *s, km_state *t, const km_msg *m) {
    int i = m->dst;
    const km_broker *b = &s->b[i];
    if (m->epoch == b->epoch && m->partition_epoch > s->alter[i].partition_epoch) {
        /* the same leader epoch, a newer partition epoch: only the ISR (makeLeader sets a committed state) */
        t->b[i].isr = (uint8_t)m->isr;
        t->alter[i].partition_epoch = (int8_t)m->partition_epoch; t->alter[i].alter_pending = 0; t->alter[i].committed_isr = 0;
    } else {
        apply_leader_and_isr(t, m);
    }
    if (config.kraft_shutdown_stops_fetcher && b->stopping && m->leader != i) {
        km_broker *after = &t->b[i];
        int applied = t->alter[i].partition_epoch == m->partition_epoch && after->epoch == m->epoch;
        if (applied && (m->leader == NO_LEADER || !IN(m->isr, i)) && after->fetch != NO_FETCHER) {
            after->fetch = NO_FETCHER;
            after->idle_cause = IDLE_STOPPED;
        }
    }
}

/* -- AlterPartition (actions_alter_partition.py) -- */

/* _alter_in_flight: an AlterPartition of the leader or the answer to it */
static int kraft_alter_in_flight(const km_state *s, int leader) {
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k);
        if ((kind == ALTER_PARTITION && s->net[k][1] - 2 == leader) ||
            (kind == ALTER_PARTITION_RESPONSE && s->net[k][2] - 2 == leader))
            return 1;
    }
    return 0;
}

/* _eligible: Partition.isReplicaIsrEligible (KIP-841: not fenced, not shutting down; KIP-903: the broker epoch of its
   last fetch is the registered one); with metadata_lag the leader's own check passes on any older view */
static int kraft_eligible(const km_state *s, int leader, int f) {
    int registered = s->registered[f], lagging = config.metadata_lag > 0;
    if (config.kip_841 && !lagging && (registered == DEAD || s->b[f].stopping)) return 0;
    if (config.kip_903) {
        int stored = s->k[leader].has_remote_epochs ? s->k[leader].remote_epochs[f] : UNDEFINED;
        return stored != UNDEFINED && (lagging || stored == registered);
    }
    return 1;
}

/* _isr_change_request_action: ShrinkIsr / ExpandIsr as an AlterPartition; the leader works with the maximal ISR */
static void kraft_isr_change_request(const km_state *s, km_succ *out, int i, int f) {
    const km_broker *leader = &s->b[i];
    int isr = leader->isr, proposed;
    uint32_t code;
    if (IN(isr, f)) {
        if (config.kafka_7152 && leader->remote[f] == leader->log_len) return;
        proposed = isr & ~(1 << f);
        code = CODE(A_SHRINK, i, f);
    } else {
        int fetched = leader->remote[f];
        if (fetched < 0 || fetched < leader->hw) return;
        if (config.kafka_7128 && fetched < epoch_start(leader, leader->epoch)) return;
        if (!kraft_eligible(s, i, f) && KM_MUTANT != 6) return;
        if (!fetch_being_answered(s, i, leader, f)) return;
        proposed = isr | 1 << f;
        code = CODE(A_EXPAND, i, f);
    }
    km_state *t = km_emit(out, s, code);
    km_msg m;
    memset(&m, 0, sizeof m);
    m.kind = ALTER_PARTITION; m.src = i; m.dst = CONTROLLER; m.epoch = leader->epoch;
    m.partition_epoch = s->alter[i].partition_epoch; m.isr = proposed;
    for (int r = 0; r < KM_N; r++) /* KIP-903: each proposed member's broker epoch (addBrokerEpochToIsr) */
        m.broker_epochs[r] = config.kip_903 && IN(proposed, r)
                                 ? (r == i ? leader->broker_epoch : s->k[i].remote_epochs[r]) : UNDEFINED;
    t->b[i].isr = (uint8_t)(isr | proposed); /* the maximal ISR: an expansion counts the new member */
    t->alter[i].alter_pending = 1; t->alter[i].committed_isr = (uint8_t)isr;
    t->alters = (int8_t)(s->alters + 1);
    net_add(out, t, &m);
}

/* _alter_leader_actions (KRaftController.leader_actions) on KRaft (KIP-841/903 eligibility, no leader check) */
static void kraft_alter_leader_actions(const km_state *s, km_succ *out, int i) {
    produce_action(s, out, i);
    advance_hw_action(s, out, i);
    if (s->alter[i].alter_pending || s->alters >= config.alters || kraft_alter_in_flight(s, i)) return;
    for (int f = 0; f < KM_N; f++)
        if (f != i) kraft_isr_change_request(s, out, i, f);
}

/* _ineligible: ineligibleReplicasForIsr (KIP-841: fenced or shutting down; KIP-903: another broker epoch) */
static int kraft_ineligible(const km_state *s, const km_msg *m) {
    for (int r = 0; r < KM_N; r++) {
        if (!IN(m->isr, r)) continue;
        if (config.kip_841 && (s->registered[r] == DEAD || s->b[r].stopping)) return 1;
        if (config.kip_903 && m->broker_epochs[r] != UNDEFINED && m->broker_epochs[r] != s->registered[r]) return 1;
    }
    return 0;
}

/* _process_alter_partition (and _lose_alter_response, bound alter_losses) of the AlterPartition in slot k */
static void kraft_process_alter_partition(const km_state *s, km_succ *out, int k, const km_msg *m) {
    int error = E_NONE;
    if (m->epoch < s->c_epoch || m->src != s->c_leader) error = E_FENCED_LEADER_EPOCH;
    else if (m->partition_epoch < s->c_partition_epoch) error = E_INVALID_UPDATE_VERSION;
    else if (kraft_ineligible(s, m)) error = E_INELIGIBLE_REPLICA;
    km_state *t = km_emit(out, s, CODE(A_PROCESS_ALTER, m->src, 0));
    net_remove(t, k);
    km_msg r;
    memset(&r, 0, sizeof r);
    r.kind = ALTER_PARTITION_RESPONSE; r.src = CONTROLLER; r.dst = m->src; r.epoch = m->epoch;
    r.partition_epoch = m->partition_epoch; r.error = error;
    if (error != E_NONE) {
        r.new_epoch = r.new_partition_epoch = UNDEFINED;
        net_add(out, t, &r);
        return;
    }
    if (!partition_change(out, t, s->c_leader, m->isr, 0, -1, -1, 0)) {
        retract(out);
        return;
    }
    const km_state after = *t;
    r.isr = after.c_isr; r.new_epoch = after.c_epoch; r.new_partition_epoch = after.c_partition_epoch;
    net_add(out, t, &r);
    if (s->alter_losses < config.alter_losses) { /* the change written, its answer lost: the request in flight again */
        km_state *u = km_emit(out, &after, CODE(A_LOSE_ALTER, m->src, 0));
        net_add(out, u, m);
        u->alter_losses = (int8_t)(s->alter_losses + 1);
    }
}

/* _receive_alter_response's effect on t (the answer removed): answers_pending, then NONE commits the ISR unless the
   leader epoch moved, INELIGIBLE_REPLICA reverts to the committed ISR, the other errors wait */
static void kraft_receive_alter_response(km_state *t, const km_msg *m) {
    int i = m->dst;
    km_broker *b = &t->b[i];
    if (!(t->alter[i].alter_pending && b->epoch == m->epoch && t->alter[i].partition_epoch == m->partition_epoch)) return;
    if (m->error == E_NONE && m->new_epoch == b->epoch) {
        b->isr = (uint8_t)m->isr;
        t->alter[i].alter_pending = 0; t->alter[i].committed_isr = 0;
        t->alter[i].partition_epoch = (int8_t)m->new_partition_epoch;
    } else if (m->error == E_INELIGIBLE_REPLICA) {
        b->isr = t->alter[i].committed_isr;
        t->alter[i].alter_pending = 0; t->alter[i].committed_isr = 0;
    }
}

/* _alter_partition_deliveries (KRaftController.deliveries) */
static void kraft_alter_partition_deliveries(const km_state *s, km_succ *out) {
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k);
        if (kind != ALTER_PARTITION && kind != ALTER_PARTITION_RESPONSE) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        if (kind == ALTER_PARTITION) {
            kraft_process_alter_partition(s, out, k, &m);
        } else {
            km_state *t = km_emit(out, s, CODE(A_RECEIVE_ALTER, m.dst, 0));
            net_remove(t, k);
            kraft_receive_alter_response(t, &m);
        }
    }
}
#endif

/* channel_order: (leader epoch, broker epoch, kind, a LeaderAndIsr's partition epoch: alter-isr's zkVersion) */
static int channel_before(const km_msg *a, const km_msg *b) {
    if (a->epoch != b->epoch) return a->epoch < b->epoch;
    if (a->broker_epoch != b->broker_epoch) return a->broker_epoch < b->broker_epoch;
    if (a->kind != b->kind) return a->kind < b->kind;
    return (a->kind == LEADER_AND_ISR ? a->partition_epoch : 0) < (b->kind == LEADER_AND_ISR ? b->partition_epoch : 0);
}

/* KafkaModel._deliveries */
static void deliveries(const km_state *s, km_succ *out) {
    int oldest[KM_N], queued[KM_N];
    km_msg first[KM_N];
    for (int d = 0; d < KM_N; d++) oldest[d] = -1, queued[d] = 0;
    for (int k = 0; k < s->net_len; k++) {
        if (!IS_CONTROL(msg_kind(s, k))) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        queued[m.dst]++;
        if (oldest[m.dst] < 0 || channel_before(&m, &first[m.dst])) {
            oldest[m.dst] = k;
            first[m.dst] = m;
        }
    }
    for (int d = 0; d < KM_N; d++) {
        if (oldest[d] < 0) continue;
        km_state *t;
        if (first[d].kind == LEADER_AND_ISR) {
            t = km_emit(out, s, CODE(A_DELIVER, d, first[d].epoch));
            net_remove(t, oldest[d]);
#if KM_F_KRAFT
            kraft_apply_leader_and_isr(s, t, &first[d]);
#else
            apply_leader_and_isr(t, &first[d]);
#endif
        } else {
            t = km_emit(out, s, CODE(A_DELIVER_STOP, d, 0));
            net_remove(t, oldest[d]);
            apply_stop_replica(t, &first[d]);
        }
        if (s->losses < config.losses && queued[d] > 1) {
            km_state *u = km_emit(out, s, CODE(A_LOSE, d, 0));
            net_remove(u, oldest[d]);
            u->losses = (int8_t)(s->losses + 1);
        }
    }
    int last_src = -1;
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k);
        if (IS_CONTROL(kind)) continue;
        km_msg m;
        msg_decode(s->net[k], &m);
        if (kind == CONTROLLED_SHUTDOWN) {
            if (m.src != last_src) { /* the controller handles one broker's requests in order */
                last_src = m.src;
                controlled_shutdowns(s, out, k, &m);
            }
        } else if (kind == FETCH) {
            serve_fetch(s, out, k, &m);
        } else if (kind == FETCH_RESPONSE) {
            km_state *t = km_emit(out, s, CODE(A_RECEIVE_FETCH, m.dst, m.src));
            net_remove(t, k);
            receive_fetch(out, t, &m);
        } else if (kind == OFFSETS_FOR_LEADER_EPOCH) {
            serve_offsets(s, out, k, &m);
        } else if (kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE) {
            km_state *t = km_emit(out, s, CODE(A_RECEIVE_OFFSETS, m.dst, m.src));
            net_remove(t, k);
            receive_offsets(t, &m);
        }
    }
    if (KM_F_ZOOKEEPER_ALTER_ISR) alter_isr_deliveries(s, out); /* AlterIsrController.deliveries */
#if KM_F_KRAFT
    kraft_alter_partition_deliveries(s, out); /* KRaftController.deliveries */
#endif
}

#if KM_CONSUMERS
/* -- the consumers (clients.py ClientActions; bound consumers, constant consumer_inflight) ----------------------- */

enum { CONSUMER_FETCH = 1, CONSUMER_FETCH_RESPONSE, CONSUMER_VALIDATE, CONSUMER_VALIDATE_RESPONSE };

/* clients._fetch_answer: the answer of broker b to a fetch at `position` by consumer c (0: None, an empty answer);
   a read past b's log (an HW above its LEO) the readable model cannot index: KM_ERR_UNCOMPILED */
static int fetch_answer(km_succ *out, const km_consumer *c, int position, const km_broker *b, km_fetch_answer *a) {
    memset(a, 0, sizeof *a);
    if (b->hw > b->log_len && (position > b->log_len || position < b->hw)) { out->error = KM_ERR_UNCOMPILED; return 0; }
    if (position > b->log_len) { /* OFFSET_OUT_OF_RANGE: a reset to the HW, surfaced */
        a->position = b->hw;
        a->last_epoch = (int8_t)(b->hw > 0 ? b->log[b->hw - 1][0] : UNDEFINED);
        a->reset = 1;
        return 1;
    }
    int skip = 0;
    if (c->consumed_len && c->consumed[c->consumed_len - 1][0] == position - 1) {
        const int8_t *e = c->consumed[c->consumed_len - 1];
        skip = b->log[e[0]][0] != e[1] || b->log[e[0]][1] != e[2];
    }
    if (position >= b->hw) { /* an empty answer: a step only when it is a silent skip */
        if (!skip || c->skipped) return 0;
        a->position = (int8_t)position; a->last_epoch = c->last_epoch; a->skip = 1;
        return 1;
    }
    for (int o = position; o < b->hw; o++) {
        int8_t *r = a->read[a->read_len++];
        r[0] = (int8_t)o; r[1] = b->log[o][0]; r[2] = b->log[o][1];
    }
    a->position = b->hw; a->last_epoch = b->log[b->hw - 1][0]; a->skip = (uint8_t)skip;
    return 1;
}

/* clients._apply_fetch_answer */
static void apply_fetch_answer(km_succ *out, km_consumer *c, const km_fetch_answer *a) {
    if (c->consumed_len + a->read_len > KM_CONSUMED) { out->error = KM_ERR_CONSUMED; return; }
    c->position = a->position; c->last_epoch = a->last_epoch;
    memcpy(c->consumed[c->consumed_len], a->read, (size_t)a->read_len * 3);
    c->consumed_len = (uint8_t)(c->consumed_len + a->read_len);
    c->skipped = c->skipped || a->skip;
    c->surfaced = (uint8_t)(c->surfaced + a->reset);
}

/* clients._apply_validate_answer: an end offset below the position is a truncation, surfaced */
static void apply_validate_answer(km_consumer *c, int answer_epoch, int end) {
    if (end != UNDEFINED && end < c->position) {
        c->position = (int8_t)end; c->last_epoch = (int8_t)answer_epoch; c->surfaced = (uint8_t)(c->surfaced + 1);
    }
    c->validating = 0;
}

static void clear_inflight(km_consumer *c) {
    c->q_broker = 0; c->q_kind = 0; c->q_incarnation = c->q_epoch = c->q_position = c->q_last_epoch = 0;
    c->q_answered = 0; memset(&c->answer, 0, sizeof c->answer); c->a_epoch = c->a_end = 0;
}

/* ClientActions._consumer_fetch_state: the answer applied at once (no successor if None) */
static void consumer_fetch(const km_state *s, km_succ *out, uint32_t code, int c, const km_broker *b) {
    km_fetch_answer a;
    if (!fetch_answer(out, &s->cons[c], s->cons[c].position, b, &a)) return;
    km_state *t = km_emit(out, s, code);
    apply_fetch_answer(out, &t->cons[c], &a);
}

/* ClientActions._fetch_from_follower_actions (KIP-392): any live follower of the consumer's leader in its epoch whose
   LEO reaches its position */
static void fetch_from_follower_actions(const km_state *s, km_succ *out, int c) {
    const km_consumer *k = &s->cons[c];
    for (int r = 0; r < KM_N; r++) {
        if (r == k->leader) continue;
        const km_broker *replica = &s->b[r];
        if (!replica->alive || replica->leader != k->leader || replica->epoch != k->epoch ||
            replica->log_len < k->position)
            continue;
        consumer_fetch(s, out, CODE(A_CONSUMER_FETCH_FOLLOWER, c, r), c, replica);
    }
}

/* ClientActions._serve_consumer_fetch: the broker answers as it is now (None: it does not lead, or 2.3+ the
   request's epoch is not its own) */
static void serve_consumer_fetch(km_succ *out, km_state *t, int c, const km_broker *b) {
    km_consumer *k = &t->cons[c];
    int i = k->q_broker;
    km_fetch_answer a;
    memset(&a, 0, sizeof a);
    int answered = 0;
    if (!(b->leader != i || (config.consumer_truncation_detection && b->epoch != k->q_epoch)))
        answered = fetch_answer(out, k, k->q_position, b, &a);
    k->q_kind = CONSUMER_FETCH_RESPONSE; k->q_epoch = 0; k->q_answered = (uint8_t)answered; k->answer = a;
}

/* clients._receive_consumer_fetch: applied unless an error, awaiting validation, or the position moved */
static void receive_consumer_fetch(km_succ *out, km_consumer *k) {
    km_fetch_answer a = k->answer;
    int apply = k->q_answered && !k->validating && k->position == k->q_position;
    clear_inflight(k);
    if (apply) apply_fetch_answer(out, k, &a);
}

/* clients._receive_consumer_validate: applied only if the position awaits validation with the same last epoch,
   leader and epoch */
static void receive_consumer_validate(km_consumer *k) {
    int apply = k->q_answered && k->validating && k->last_epoch == k->q_last_epoch && k->leader == k->q_broker &&
                k->epoch == k->q_epoch;
    int answer_epoch = k->a_epoch, end = k->a_end;
    clear_inflight(k);
    if (apply) apply_validate_answer(k, answer_epoch, end);
}

/* ClientActions._delayed_consumer_actions (consumer_inflight=1): one request outstanding, served, received, or lost
   with its broker's connection */
static void delayed_consumer_actions(const km_state *s, km_succ *out, int c) {
    const km_consumer *k = &s->cons[c];
    if (k->q_kind) {
        int i = k->q_broker;
        const km_broker *b = &s->b[i];
        if (!b->alive || b->incarnation != k->q_incarnation) {
            clear_inflight(&km_emit(out, s, CODE(A_CONSUMER_DISCONNECT, c, i))->cons[c]);
            return;
        }
        if (k->q_kind == CONSUMER_FETCH) {
            serve_consumer_fetch(out, km_emit(out, s, CODE(A_CONSUMER_SERVE_FETCH, c, i)), c, b);
        } else if (k->q_kind == CONSUMER_FETCH_RESPONSE) {
            receive_consumer_fetch(out, &km_emit(out, s, CODE(A_CONSUMER_RECEIVE_FETCH, c, i))->cons[c]);
        } else if (k->q_kind == CONSUMER_VALIDATE) { /* NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH: no answer */
            km_consumer *u = &km_emit(out, s, CODE(A_CONSUMER_SERVE_VALIDATE, c, i))->cons[c];
            u->q_kind = CONSUMER_VALIDATE_RESPONSE;
            if (!(b->leader != i || b->epoch != k->q_epoch)) { /* ClientActions._validate_answer */
                int epoch, end;
                end_offset_for(b, k->q_last_epoch, config.kafka_7415, &epoch, &end);
                u->q_answered = 1; u->a_epoch = (int8_t)epoch; u->a_end = (int8_t)end;
            }
        } else {
            receive_consumer_validate(&km_emit(out, s, CODE(A_CONSUMER_RECEIVE_VALIDATE, c, i))->cons[c]);
        }
        return;
    }
    int i = k->leader;
    if (i < 0 || !s->b[i].alive) return;
    const km_broker *b = &s->b[i];
    km_consumer *u = &km_emit(out, s, CODE(k->validating ? A_CONSUMER_SEND_VALIDATE : A_CONSUMER_SEND_FETCH, c, i))
                          ->cons[c];
    u->q_broker = (int8_t)i; u->q_incarnation = b->incarnation; u->q_epoch = k->epoch;
    if (k->validating) { u->q_kind = CONSUMER_VALIDATE; u->q_last_epoch = k->last_epoch; }
    else { u->q_kind = CONSUMER_FETCH; u->q_position = k->position; }
}

/* ClientActions._consumer_actions: each consumer's metadata update, then its fetch or validation (or, with
   consumer_inflight=1, its request's next step) */
static void consumer_actions(const km_state *s, km_succ *out) {
    for (int c = 0; c < KM_CONSUMERS; c++) {
        const km_consumer *k = &s->cons[c];
        int known = s->c_leader;
        if (known >= 0 && (known != k->leader || s->c_epoch != k->epoch)) { /* ClientActions._metadata_state */
            km_consumer *u = &km_emit(out, s, CODE(A_CONSUMER_METADATA, c, known))->cons[c];
            u->validating = k->validating || (config.consumer_truncation_detection && k->last_epoch != UNDEFINED &&
                                              KM_MUTANT != 7);
            u->leader = (int8_t)known; u->epoch = s->c_epoch;
        }
        if (config.consumer_inflight) {
            delayed_consumer_actions(s, out, c);
            continue;
        }
        int i = k->leader;
        if (i < 0 || !s->b[i].alive) continue;
        const km_broker *b = &s->b[i];
        /* NOT_LEADER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH: a metadata update first */
        if (b->leader != i || (config.consumer_truncation_detection && b->epoch != k->epoch)) continue;
        if (k->validating) { /* ClientActions._validate_state */
            int epoch, end;
            end_offset_for(b, k->last_epoch, config.kafka_7415, &epoch, &end);
            apply_validate_answer(&km_emit(out, s, CODE(A_CONSUMER_VALIDATE, c, i))->cons[c], epoch, end);
            continue;
        }
        consumer_fetch(s, out, CODE(A_CONSUMER_FETCH, c, i), c, b);
        if (config.fetch_from_follower) fetch_from_follower_actions(s, out, c);
    }
}
#endif

/* KafkaModel.successors: the controller, each broker, the deliveries, the consumers */
static void km_successors(const km_state *s, km_succ *out) {
#if KM_F_KRAFT /* KRaftController: actions_kraft, actions_broker_lifecycle */
    kraft_controller_actions(s, out);
    for (int i = 0; i < KM_N; i++) kraft_broker_actions(s, out, i);
#else
    controller_actions(s, out);
    for (int i = 0; i < KM_N; i++) broker_actions(s, out, i);
#endif
    deliveries(s, out);
#if KM_CONSUMERS
    consumer_actions(s, out);
#endif
}

/* -- the dead answers (dead.py DeadMessages) --------------------------------------------------------------- */

/* DeadMessages._noop: delivering the answer changes no broker and crashes nothing */
static int delivery_noop(const km_state *s, int k, const km_msg *m) {
    km_state t = *s;
    km_succ scratch;
    scratch.error = 0;
    if (m->kind == FETCH_RESPONSE) receive_fetch(&scratch, &t, m);
#if KM_F_KRAFT
    else if (m->kind == ALTER_PARTITION_RESPONSE) { /* the leader's partition state unchanged */
        kraft_receive_alter_response(&t, m);
        return memcmp(t.b, s->b, sizeof s->b) == 0 && memcmp(t.alter, s->alter, sizeof s->alter) == 0 &&
               memcmp(t.k, s->k, sizeof s->k) == 0;
    }
#endif
    else receive_offsets(&t, m);
    (void)k;
    return memcmp(t.b, s->b, sizeof s->b) == 0 && memcmp(t.pending, s->pending, sizeof s->pending) == 0 &&
           memcmp(t.alter, s->alter, sizeof s->alter) == 0 &&
           t.crashes == s->crashes && !scratch.error;
}

/* DeadMessages._may_expand */
static int may_expand(const km_state *s, const km_msg *m) {
    const km_broker *leader = &s->b[m->src];
    return leader->alive && leader->leader == m->src && m->error == E_NONE &&
           (!config.kafka_13141 || m->diverging_epoch == UNDEFINED) &&
           (!config.leader_epoch_fencing || m->epoch == leader->epoch);
}

#define FENCED_RETRIED (!(config.leader_epoch_fencing && config.removes_fenced_partition))
#define FENCED_BY_EPOCH (config.leader_epoch_fencing && config.removes_fenced_partition && config.kafka_9654)
#define FETCH_NOOP_DEAD (config.leader_epoch_fencing && config.uses_offsets_request && config.kafka_5163 && \
                         !config.hw_truncation)
#define OFFSETS_EPOCH_DEAD (config.checks_offsets_answer_epoch && config.uses_offsets_request)

/* DeadMessages.dead */
static int dead(const km_state *s, int k, const km_msg *m) {
    /* 5: the KRaft rows' AlterPartition answers that are no-ops now */
    if (m->kind == ALTER_PARTITION_RESPONSE) return KM_F_KRAFT && delivery_noop(s, k, m);
    int error = m->error;
    if (error == E_NOT_LEADER || error == E_UNKNOWN_LEADER_EPOCH) return 1;
    const km_broker *follower = &s->b[m->dst];
    if (error == E_FENCED_LEADER_EPOCH && (FENCED_RETRIED || (FENCED_BY_EPOCH && m->epoch != follower->epoch)))
        return 1;
    if (m->kind == FETCH_RESPONSE) {
        if (error == E_NONE && may_expand(s, m)) return 0;
        if (FETCH_NOOP_DEAD) {
            if (follower->fetch != FETCHING || follower->leader != m->src || follower->log_len != m->offset) return 1;
            return !m->nrec && delivery_noop(s, k, m);
        }
        if (config.kafka_18991) return m->epoch != follower->epoch || delivery_noop(s, k, m);
        return 0;
    }
    if (OFFSETS_EPOCH_DEAD) return m->epoch != follower->epoch || delivery_noop(s, k, m);
    return 0;
}

/* DeadMessages.reduce: the state without its dead answers */
static void km_reduce(km_state *s) {
    const km_state before = *s;
    int kept = 0;
    for (int k = 0; k < before.net_len; k++) {
        int kind = msg_kind(&before, k);
        if (kind == FETCH_RESPONSE || kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE ||
            (KM_F_KRAFT && kind == ALTER_PARTITION_RESPONSE)) {
            km_msg m;
            msg_decode(before.net[k], &m);
            if (dead(&before, k, &m)) continue;
        }
        if (kept != k) memcpy(s->net[kept], before.net[k], KM_MSG);
        kept++;
    }
    for (int k = kept; k < before.net_len; k++) memset(s->net[k], 0, KM_MSG);
    s->net_len = (uint8_t)kept;
}

/* -- the canonical form (symmetry.py) ------------------------------------------------------------------------ */

/* a broker's signature (symmetry.signatures), order-preserving: its id-free fields, whether it leads in its own
   view and in the controller's, its registration and its ISR membership at the controller */
static int signature(const km_state *s, int i, uint8_t *p) {
    const km_broker *b = &s->b[i];
    int at = 0;
#define PUT(v) (p[at++] = (uint8_t)((v) + 2))
    PUT(b->alive);
    for (int o = 0; o < b->log_len; o++) { PUT(b->log[o][0]); PUT(b->log[o][1]); }
    p[at++] = 0;
    PUT(b->hw);
    for (int k = 0; k < b->cache_len; k++) { PUT(b->cache[k][0]); PUT(b->cache[k][1]); }
    p[at++] = 0;
    PUT(b->epoch); PUT(b->fetch); PUT(b->broker_epoch); PUT(b->stopping); PUT(b->incarnation); PUT(b->stale);
    PUT(b->reconciled); PUT(b->idle_cause);
    PUT(s->alter[i].partition_epoch); PUT(s->alter[i].alter_pending); /* alter-isr's id-free fields */
    PUT(b->leader == i); PUT(s->c_leader == i); PUT(s->registered[i]); PUT(IN(s->c_isr, i));
#undef PUT
    return at;
}

#define SIG_BYTES (2 * KM_LOG + 2 * KM_CACHE + 22)

/* the state's tuple, order-preserving (KafkaState compared as Python compares it): the tie-break of the canonical
   form, the least image */
static int serialize(const km_state *s, uint8_t *p) {
    int at = 0;
#define PUT(v) (p[at++] = (uint8_t)((v) + 2))
    for (int i = 0; i < KM_N; i++) {
        const km_broker *b = &s->b[i];
        PUT(b->alive);
        for (int o = 0; o < b->log_len; o++) { PUT(b->log[o][0]); PUT(b->log[o][1]); }
        p[at++] = 0;
        PUT(b->hw);
        for (int k = 0; k < b->cache_len; k++) { PUT(b->cache[k][0]); PUT(b->cache[k][1]); }
        p[at++] = 0;
        PUT(b->leader); PUT(b->epoch);
        for (int r = 0; r < KM_N; r++)
            if (IN(b->isr, r)) PUT(r);
        p[at++] = 0;
        PUT(b->fetch);
        if (b->has_remote)
            for (int r = 0; r < KM_N; r++) PUT(b->remote[r]);
        p[at++] = 0;
        PUT(b->broker_epoch); PUT(b->stopping); PUT(b->incarnation); PUT(b->stale); PUT(b->reconciled);
        PUT(b->idle_cause);
        if (has_pending(s, i)) {
            const km_pending *q = &s->pending[i];
            PUT(q->source); PUT(q->request_epoch); PUT(q->epoch); PUT(q->end);
        }
        p[at++] = 0;
        /* alter-isr: partition_epoch, alter_pending, committed_isr (the fields after it are never set here) */
        PUT(s->alter[i].partition_epoch); PUT(s->alter[i].alter_pending);
        for (int r = 0; r < KM_N; r++)
            if (IN(s->alter[i].committed_isr, r)) PUT(r);
        p[at++] = 0;
#if KM_F_KRAFT /* remote_epochs (replicas, hw_stale: constant here) */
        if (s->k[i].has_remote_epochs)
            for (int r = 0; r < KM_N; r++) PUT(s->k[i].remote_epochs[r]);
        p[at++] = 0;
#endif
    }
    PUT(s->c_leader); PUT(s->c_epoch);
    for (int r = 0; r < KM_N; r++)
        if (IN(s->c_isr, r)) PUT(r);
    p[at++] = 0;
    for (int r = 0; r < KM_N; r++) PUT(s->registered[r]);
#if KM_F_KRAFT /* the controller's partition_epoch (id-free: equal in every image) and elr */
    PUT(s->c_partition_epoch);
    for (int r = 0; r < KM_N; r++)
        if (IN(s->c_elr, r)) PUT(r);
    p[at++] = 0;
#endif
    for (int k = 0; k < s->net_len; k++) {
        memcpy(p + at, s->net[k], KM_MSG); /* a message's encoding ends before the next begins: its own zeros */
        at += KM_MSG;
    }
    p[at++] = 0;
    PUT(s->produced); PUT(s->crashes); PUT(s->bumps); PUT(s->shutdowns); PUT(s->bounces); PUT(s->losses);
    for (int k = 0; k < s->committed_len; k++) { PUT(s->committed[k][0]); PUT(s->committed[k][1]); PUT(s->committed[k][2]); }
    p[at++] = 0;
    for (int k = 0; k < s->acked_len; k++) { PUT(s->acked[k][0]); PUT(s->acked[k][1]); PUT(s->acked[k][2]); }
    p[at++] = 0;
#if KM_CONSUMERS /* KafkaState.consumers, each Consumer's fields in order (the inflight tuple's ids first) */
    for (int c = 0; c < KM_CONSUMERS; c++) {
        const km_consumer *k = &s->cons[c];
        PUT(k->leader); PUT(k->epoch); PUT(k->position); PUT(k->last_epoch); PUT(k->validating);
        for (int e = 0; e < k->consumed_len; e++) { PUT(k->consumed[e][0]); PUT(k->consumed[e][1]); PUT(k->consumed[e][2]); }
        p[at++] = 0;
        PUT(k->skipped); PUT(k->surfaced); PUT(k->read_before_unclean);
        if (k->q_kind) {
            PUT(k->q_broker); PUT(k->q_kind); PUT(k->q_incarnation); PUT(k->q_epoch); PUT(k->q_position);
            PUT(k->q_last_epoch); PUT(k->q_answered);
            const km_fetch_answer *a = &k->answer; /* id-free: equal in every image */
            PUT(a->position); PUT(a->last_epoch); PUT(a->read_len);
            for (int e = 0; e < a->read_len; e++) { PUT(a->read[e][0]); PUT(a->read[e][1]); PUT(a->read[e][2]); }
            PUT(a->skip); PUT(a->reset); PUT(k->a_epoch); PUT(k->a_end);
        }
        p[at++] = 0;
    }
#endif
#undef PUT
    return at;
}

#define SER_BYTES (KM_N * (2 * KM_LOG + 2 * KM_CACHE + 5 * KM_N + 29) + 3 * KM_N + 10 + KM_NET * KM_MSG + 6 * KM_LOG + 12 + \
                   KM_CONSUMERS * (3 * KM_CONSUMED + 3 * KM_LOG + 24))

static int rename_id(const int *p, int id) { return id < 0 ? id : p[id]; }

static int rename_mask(const int *p, int mask) {
    int out = 0;
    for (int i = 0; i < KM_N; i++)
        if (IN(mask, i)) out |= 1 << p[i];
    return out;
}

/* symmetry._permute: broker i renamed p[i] everywhere (brokers reordered, ids renamed, the network re-sorted) */
static void permute(const km_state *s, const int *p, km_state *t) {
    *t = *s;
    for (int i = 0; i < KM_N; i++) {
        km_broker *b = &t->b[p[i]];
        *b = s->b[i];
        b->leader = (int8_t)rename_id(p, s->b[i].leader);
        b->isr = (uint8_t)rename_mask(p, s->b[i].isr);
        if (b->has_remote)
            for (int k = 0; k < KM_N; k++) b->remote[p[k]] = s->b[i].remote[k];
        t->registered[p[i]] = s->registered[i];
        t->pending[p[i]] = s->pending[i];
        t->pending[p[i]].source = (int8_t)rename_id(p, s->pending[i].source);
        t->alter[p[i]] = s->alter[i];
        t->alter[p[i]].committed_isr = (uint8_t)rename_mask(p, s->alter[i].committed_isr);
#if KM_F_KRAFT
        t->k[p[i]] = s->k[i];
        if (s->k[i].has_remote_epochs)
            for (int k = 0; k < KM_N; k++) t->k[p[i]].remote_epochs[p[k]] = s->k[i].remote_epochs[k];
#endif
    }
    t->c_leader = (int8_t)rename_id(p, s->c_leader);
    t->c_isr = (uint8_t)rename_mask(p, s->c_isr);
#if KM_F_KRAFT
    t->c_elr = (uint8_t)rename_mask(p, s->c_elr);
#endif
#if KM_CONSUMERS /* a consumer's leader and its request's broker (consumers themselves are not permuted) */
    for (int c = 0; c < KM_CONSUMERS; c++) {
        t->cons[c].leader = (int8_t)rename_id(p, s->cons[c].leader);
        if (s->cons[c].q_kind) t->cons[c].q_broker = (int8_t)rename_id(p, s->cons[c].q_broker);
    }
#endif
    t->net_len = 0;
    memset(t->net, 0, sizeof t->net);
    km_succ scratch;
    scratch.error = 0;
    for (int k = 0; k < s->net_len; k++) {
        km_msg m;
        msg_decode(s->net[k], &m);
        m.src = rename_id(p, m.src);
        m.dst = rename_id(p, m.dst);
        if (m.kind == LEADER_AND_ISR) {
            m.leader = rename_id(p, m.leader);
            m.isr = rename_mask(p, m.isr);
        } else if (m.kind == ALTER_PARTITION_RESPONSE) {
            m.isr = rename_mask(p, m.isr);
        } else if (m.kind == ALTER_PARTITION) {
            m.isr = rename_mask(p, m.isr);
            int epochs[KM_N];
            for (int r = 0; r < KM_N; r++) epochs[r] = m.broker_epochs[r];
            for (int r = 0; r < KM_N; r++) m.broker_epochs[p[r]] = epochs[r];
        }
        net_add(&scratch, t, &m);
    }
}

/* symmetry.canonical: the least renaming among those that sort the broker signatures */
static void km_canonical(km_state *s) {
    uint8_t sig[KM_N][SIG_BYTES];
    for (int i = 0; i < KM_N; i++) {
        memset(sig[i], 0, SIG_BYTES);
        signature(s, i, sig[i]);
    }
    int increasing = 1;
    for (int i = 0; i + 1 < KM_N; i++)
        if (memcmp(sig[i], sig[i + 1], SIG_BYTES) >= 0) increasing = 0;
    if (increasing) return;
    /* order[new position] = old id, a stable sort by signature */
    int order[KM_N];
    for (int i = 0; i < KM_N; i++) {
        int k = i;
        while (k > 0 && memcmp(sig[order[k - 1]], sig[i], SIG_BYTES) > 0) { order[k] = order[k - 1]; k--; }
        order[k] = i;
    }
    /* spec.symmetry.candidate_permutations: every order of each group of equal signatures */
    int group[KM_N]; /* group[position]: the position its group starts at */
    for (int k = 0; k < KM_N; k++)
        group[k] = (k > 0 && memcmp(sig[order[k - 1]], sig[order[k]], SIG_BYTES) == 0) ? group[k - 1] : k;
    int choice[KM_N]; /* a permutation of positions within each group, enumerated in product order */
    for (int k = 0; k < KM_N; k++) choice[k] = k;
    km_state best, image;
    uint8_t best_bytes[SER_BYTES], image_bytes[SER_BYTES];
    int have = 0, best_len = 0;
    for (;;) {
        int p[KM_N];
        for (int k = 0; k < KM_N; k++) p[order[choice[k]]] = k;
        permute(s, p, &image);
        memset(image_bytes, 0, SER_BYTES);
        int len = serialize(&image, image_bytes);
        if (!have || memcmp(image_bytes, best_bytes, (size_t)(len > best_len ? len : best_len)) < 0) {
            best = image;
            memcpy(best_bytes, image_bytes, SER_BYTES);
            best_len = len;
            have = 1;
        }
        /* the next choice: the last group's next permutation first (itertools.product over permutations) */
        int g = KM_N - 1;
        for (;;) {
            while (g >= 0 && group[g] != g) g--;
            if (g < 0) break;
            int start = g, end = start + 1;
            while (end < KM_N && group[end] == start) end++;
            /* next lexicographic permutation of choice[start:end] */
            int a = end - 2;
            while (a >= start && choice[a] > choice[a + 1]) a--;
            if (a >= start) {
                int b2 = end - 1;
                while (choice[b2] < choice[a]) b2--;
                int tmp = choice[a]; choice[a] = choice[b2]; choice[b2] = tmp;
                for (int x = a + 1, y = end - 1; x < y; x++, y--) { tmp = choice[x]; choice[x] = choice[y]; choice[y] = tmp; }
                break;
            }
            for (int x = start, y = end - 1; x < y; x++, y--) { int t2 = choice[x]; choice[x] = choice[y]; choice[y] = t2; }
            g = start - 1;
        }
        if (g < 0) break;
    }
    *s = best;
}

/* -- invariants (invariants/kafka_log_matching.py) --------------------------------------------------------- */

static int logs_agree_below(const km_broker *a, const km_broker *b, int bound) {
    for (int o = 0; o < bound; o++)
        if (a->log[o][0] != b->log[o][0] || a->log[o][1] != b->log[o][1]) return 0;
    return 1;
}

static int bound_of(const km_broker *a, const km_broker *b) {
    return MIN(MIN(a->hw, b->hw), MIN(a->log_len, b->log_len));
}

/* log_matching: every (leader, reconciled follower) pair, pairs() */
static int log_matching(const km_state *s) {
    for (int l = 0; l < KM_N; l++) {
        const km_broker *a = &s->b[l];
        if (!a->alive || a->leader != l) continue;
        for (int f = 0; f < KM_N; f++) {
            const km_broker *b = &s->b[f];
            if (f != l && b->alive && b->leader == l && b->epoch == a->epoch && b->reconciled == a->epoch &&
                !logs_agree_below(a, b, bound_of(a, b)))
                return 0;
        }
    }
    return 1;
}

/* log_matching_all_pairs */
static int log_matching_all_pairs(const km_state *s) {
    for (int a = 0; a < KM_N; a++)
        for (int b = a + 1; b < KM_N; b++)
            if (!logs_agree_below(&s->b[a], &s->b[b], bound_of(&s->b[a], &s->b[b]))) return 0;
    return 1;
}

/* log_matching_raft */
static int log_matching_raft(const km_state *s) {
    for (int a = 0; a < KM_N; a++)
        for (int b = a + 1; b < KM_N; b++) {
            const km_broker *x = &s->b[a], *y = &s->b[b];
            for (int o = MIN(x->log_len, y->log_len) - 1; o >= 0; o--)
                if (x->log[o][0] == y->log[o][0]) {
                    if (!logs_agree_below(x, y, o + 1)) return 0;
                    break;
                }
        }
    return 1;
}

/* invariants/kafka_durability.current_leader: the broker that applied the controller's current epoch as leader */
static int current_leader(const km_state *s) {
    int i = s->c_leader;
    if (i < 0) return -1;
    const km_broker *b = &s->b[i];
    return b->alive && b->leader == i && b->epoch == s->c_epoch ? i : -1;
}

static int holds_entry(const km_broker *b, const int8_t *entry) {
    return entry[0] < b->log_len && b->log[entry[0]][0] == entry[1] && b->log[entry[0]][1] == entry[2];
}

/* first_missing_at_leader is None: every entry is at its offset in the current leader's log */
static int at_leader(const km_state *s, uint8_t len, const int8_t (*set)[3]) {
    int i = current_leader(s);
    if (i < 0) return 1;
    for (int k = 0; k < len; k++)
        if (!holds_entry(&s->b[i], set[k])) return 0;
    return 1;
}

/* committed_durable */
static int committed_durable(const km_state *s) { return at_leader(s, s->committed_len, s->committed); }

/* invariants/kafka_clients.acknowledged_durable */
static int acknowledged_durable(const km_state *s) { return at_leader(s, s->acked_len, s->acked); }

/* no_uncommitted_below_hw: every record below a live replica's HW is committed */
static int no_uncommitted_below_hw(const km_state *s) {
    for (int i = 0; i < KM_N; i++) {
        const km_broker *b = &s->b[i];
        if (!b->alive) continue;
        for (int o = 0; o < MIN(b->hw, b->log_len); o++) {
            int found = 0;
            for (int k = 0; k < s->committed_len && !found; k++)
                found = s->committed[k][0] == o && s->committed[k][1] == b->log[o][0] && s->committed[k][2] == b->log[o][1];
            if (!found) return 0;
        }
    }
    return 1;
}

/* invariants/kafka_sanity._broker_problem is None */
static int broker_sane(const km_broker *b, int leads) {
    int leo = b->log_len, n = b->cache_len;
    if (leads && b->hw > leo) return 0;
    if (!n) return 1;
    for (int k = 1; k < n; k++)
        if (b->cache[k][0] <= b->cache[k - 1][0] || b->cache[k][1] <= b->cache[k - 1][1]) return 0;
    if (b->cache[n - 1][1] > leo) return 0;
    int k = -1;
    for (int o = 0; o < leo; o++) {
        while (k + 1 < n && b->cache[k + 1][1] <= o) k++;
        if (b->log[o][0] != (k >= 0 ? b->cache[k][0] : -1)) return 0;
    }
    return 1;
}

/* replica_sanity */
static int replica_sanity(const km_state *s) {
    for (int i = 0; i < KM_N; i++)
        if (!broker_sane(&s->b[i], s->b[i].alive && s->b[i].leader == i)) return 0;
    return 1;
}

/* no_stale_control_request */
static int no_stale_control_request(const km_state *s) {
    for (int i = 0; i < KM_N; i++)
        if (s->b[i].stale) return 0;
    return 1;
}

/* invariants/kafka_control._controller_pending */
static int controller_pending(const km_state *s, int i) {
    if (s->registered[i] != s->b[i].broker_epoch) return 1;
    for (int k = 0; k < s->net_len; k++) {
        int kind = msg_kind(s, k); /* a control request's dst and a ControlledShutdown's src come first */
        if ((IS_CONTROL(kind) || kind == CONTROLLED_SHUTDOWN) && s->net[k][1] - 2 == i) return 1;
    }
    return 0;
}

/* stalled_followers(state, cause) is not empty */
static int stalled(const km_state *s, int cause) {
    int leader = current_leader(s);
    if (leader < 0 || controller_pending(s, leader)) return 0;
    for (int i = 0; i < KM_N; i++) {
        const km_broker *b = &s->b[i];
        if (i == leader || !b->alive || b->stopping || b->fetch != NO_FETCHER || b->idle_cause != cause) continue;
        if (controller_pending(s, i)) continue;
        int talking = 0;
        for (int k = 0; k < s->net_len && !talking; k++)
            talking = IS_DATA(msg_kind(s, k)) && (s->net[k][1] - 2 == i || s->net[k][2] - 2 == i);
        if (!talking) return 1;
    }
    return 0;
}

/* invariants/kafka_kraft.elr_safety: while no ISR member is alive, every electable ELR member (alive, unfenced)
   holds every committed record */
static int elr_safety(const km_state *s) {
#if KM_F_KRAFT
    if (!s->c_elr) return 1;
    for (int r = 0; r < KM_N; r++)
        if (IN(s->c_isr, r) && s->b[r].alive) return 1;
    for (int b = 0; b < KM_N; b++) {
        if (!IN(s->c_elr, b) || !s->b[b].alive || s->registered[b] == DEAD) continue;
        for (int k = 0; k < s->committed_len; k++)
            if (!holds_entry(&s->b[b], s->committed[k])) return 0;
    }
#endif
    (void)s;
    return 1;
}

/* invariants/kafka_clients.no_silent_skip */
static int no_silent_skip(const km_state *s) {
#if KM_CONSUMERS
    for (int c = 0; c < KM_CONSUMERS; c++)
        if (s->cons[c].skipped) return 0;
#endif
    (void)s;
    return 1;
}

/* invariants/kafka_clients.consumed_stays: every record a consumer read (but those read before the last unclean
   election, unless it read on silently) is at its offset in the current leader's log */
static int consumed_stays(const km_state *s) {
#if KM_CONSUMERS
    int i = current_leader(s);
    if (i < 0) return 1;
    for (int c = 0; c < KM_CONSUMERS; c++) {
        const km_consumer *k = &s->cons[c];
        for (int e = k->skipped ? 0 : k->read_before_unclean; e < k->consumed_len; e++)
            if (!holds_entry(&s->b[i], k->consumed[e])) return 0;
    }
#endif
    (void)s;
    return 1;
}

/* the invariants of invariants/kafka*.py in spec/kafka/kernel.py INVARIANTS' order; elr-safety reads the ELR, which
   only the KRaft rows keep */
static uint32_t km_violations(const km_state *s) {
    return (uint32_t)!log_matching(s) | (uint32_t)!log_matching_all_pairs(s) << 1 |
           (uint32_t)!log_matching_raft(s) << 2 | (uint32_t)!committed_durable(s) << 3 |
           (uint32_t)!no_uncommitted_below_hw(s) << 4 | (uint32_t)!replica_sanity(s) << 5 |
           (uint32_t)!no_stale_control_request(s) << 6 | (uint32_t)stalled(s, IDLE_FENCED) << 7 |
           (uint32_t)stalled(s, IDLE_RESTARTED) << 8 | (uint32_t)!acknowledged_durable(s) << 9 |
           (uint32_t)!no_silent_skip(s) << 10 | (uint32_t)!consumed_stays(s) << 11 | (uint32_t)!elr_safety(s) << 12;
}
