/*
 * Standalone driver of the simulator core, without Python, for memory checkers
 * (valgrind memcheck, AddressSanitizer) and instruction-level profiles.
 *
 *   episode_main FILE run POLICY [PARAM ...]
 *       one whole episode with a native policy and its parameters
 *   episode_main FILE step K PMAX N_ENVS STEPS
 *       N_ENVS copies of the episode stepped through the observation API with
 *       pseudo-random slot actions, as the vector environment does
 *   episode_main FILE step-clone K PMAX N_ENVS STEPS
 *       the same, each copy replaced by a clone of itself (mps_sim_clone) every 97
 *       steps and the original freed: the checksum must be the step mode's
 *   episode_main FILE lookahead POLICY [PARAM ...]
 *       the episode run with the policy in pieces of 0.25 s (mps_run_until), a clone
 *       taken at each stop, its future held (mps_hold_future: every path at 1 Mbit/s)
 *       and run to its end, then freed; for a policy whose state a restart rebuilds
 *       (MinRTT) the checksum must be the run mode's
 *
 * FILE is written by dump_episode.py. Prints a checksum of the outputs, so that two
 * builds can be compared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs.h"
#include "policy.h"
#include "sim.h"

static int read_i64(FILE *f, int64_t *x) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1) return -1;
    *x = (int64_t)v;
    return 0;
}

static int read_u64(FILE *f, uint64_t *x) {
    unsigned long long v;
    if (fscanf(f, "%llu", &v) != 1) return -1;
    *x = (uint64_t)v;
    return 0;
}

static int read_schedule(FILE *f, mps_link_config *k) {
    int64_t nseg;
    if (read_i64(f, &k->queue_bytes) || read_i64(f, &k->bw_cycle_ns) || read_i64(f, &nseg) || nseg < 1) return -1;
    k->bw_n = (int32_t)nseg;
    int64_t *starts = malloc((size_t)nseg * sizeof(int64_t));
    int64_t *rates = malloc((size_t)nseg * sizeof(int64_t));
    k->bw_start_ns = starts;
    k->bw_rate_bps = rates;
    if (!starts || !rates) return -1;
    for (int64_t i = 0; i < nseg; i++)
        if (read_i64(f, &starts[i])) return -1;
    for (int64_t i = 0; i < nseg; i++)
        if (read_i64(f, &rates[i])) return -1;
    return 0;
}

static int read_subflow(FILE *f, mps_subflow_config *p) {
    int64_t link, loss_model, cc, fast_recovery, delay_n, down_n, backup, cubic_arithmetic;
    if (read_i64(f, &link) || read_i64(f, &p->fwd_delay_ns) || read_i64(f, &p->rev_delay_ns) ||
        read_i64(f, &loss_model) || read_u64(f, &p->loss_threshold) || read_u64(f, &p->ge_p_threshold) ||
        read_u64(f, &p->ge_r_threshold) || read_u64(f, &p->ge_bad_loss_threshold) || read_i64(f, &cc) ||
        read_i64(f, &p->initial_cwnd_bytes) || read_i64(f, &p->min_rto_ns) || read_i64(f, &p->max_rto_ns) ||
        read_i64(f, &p->ring_capacity) || read_i64(f, &p->start_ns) || read_i64(f, &p->stop_ns) ||
        read_i64(f, &fast_recovery) || read_i64(f, &p->fwd_jitter_ns) || read_i64(f, &p->rev_jitter_ns) ||
        read_i64(f, &delay_n) || delay_n < 0 || delay_n > MPS_MAX_DELAY_STEPS || read_i64(f, &down_n) ||
        down_n < 0 || down_n > MPS_MAX_OUTAGES || read_i64(f, &backup) || read_u64(f, &p->ack_loss_threshold) ||
        read_i64(f, &p->rev_rate_bps) || read_i64(f, &p->ack_bytes) || read_i64(f, &p->rev_queue_bytes) ||
        read_i64(f, &p->ccp_gain_milli) || read_i64(f, &p->ccp_storage_bytes) || read_i64(f, &cubic_arithmetic))
        return -1;
    p->backup = (int32_t)backup;
    p->delay_n = (int32_t)delay_n;
    int64_t *steps[3];
    const int64_t **fields[3] = {&p->delay_start_ns, &p->fwd_delay_step_ns, &p->rev_delay_step_ns};
    for (int k = 0; k < 3; k++) { /* owned by the config from here on: free_config frees them */
        *fields[k] = steps[k] = malloc((size_t)(delay_n > 0 ? delay_n : 1) * sizeof(int64_t));
        if (!steps[k]) return -1;
    }
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < delay_n; i++)
            if (read_i64(f, &steps[k][i])) return -1;
    p->down_n = (int32_t)down_n;
    int64_t *outages[2];
    const int64_t **outage_fields[2] = {&p->down_start_ns, &p->down_end_ns};
    for (int k = 0; k < 2; k++) {
        *outage_fields[k] = outages[k] = malloc((size_t)(down_n > 0 ? down_n : 1) * sizeof(int64_t));
        if (!outages[k]) return -1;
        for (int64_t i = 0; i < down_n; i++)
            if (read_i64(f, &outages[k][i])) return -1;
    }
    p->link = (int32_t)link;
    p->fast_recovery = (int32_t)fast_recovery;
    p->cubic_arithmetic = (int32_t)cubic_arithmetic;
    p->loss_model = (int32_t)loss_model;
    p->cc = (int32_t)cc;
    return 0;
}

/* Episode file: see dump_episode.py. Arrays are allocated here and freed by free_config. */
static int read_config(const char *path, mps_config *c) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(c, 0, sizeof *c);
    int64_t mss, header, receiver, stream_sequence, drop_expired, n_links, n_paths, n_cross, n_blocks;
    if (read_i64(f, &mss) || read_i64(f, &header) || read_i64(f, &c->end_ns) || read_u64(f, &c->seed) ||
        read_i64(f, &receiver) || read_i64(f, &c->rbuf_bytes) || read_i64(f, &stream_sequence) ||
        read_i64(f, &drop_expired) ||
        read_i64(f, &n_links) || read_i64(f, &n_paths) ||
        read_i64(f, &n_cross) || read_i64(f, &n_blocks) || n_links < 1 || n_links > MPS_MAX_LINKS || n_paths < 1 ||
        n_paths > MPS_MAX_PATHS || n_cross < 0 || n_cross > MPS_MAX_CROSS || n_blocks < 1)
        goto bad;
    c->mss_bytes = (int32_t)mss;
    c->header_bytes = (int32_t)header;
    c->receiver = (int32_t)receiver;
    c->stream_sequence = (int32_t)stream_sequence;
    c->drop_expired = (int32_t)drop_expired;
    c->n_links = (int32_t)n_links;
    c->n_paths = (int32_t)n_paths;
    c->n_cross = (int32_t)n_cross;
    c->n_blocks = (int32_t)n_blocks;
    for (int l = 0; l < c->n_links; l++)
        if (read_schedule(f, &c->links[l])) goto bad;
    for (int j = 0; j < c->n_paths + c->n_cross; j++)
        if (read_subflow(f, &c->subflows[j])) goto bad;
    int64_t *arrival = malloc((size_t)n_blocks * sizeof(int64_t));
    int64_t *size = malloc((size_t)n_blocks * sizeof(int64_t));
    int64_t *deadline = malloc((size_t)n_blocks * sizeof(int64_t));
    int32_t *priority = malloc((size_t)n_blocks * sizeof(int32_t));
    double *weight = malloc((size_t)n_blocks * sizeof(double));
    c->arrival_ns = arrival;
    c->size_bytes = size;
    c->deadline_ns = deadline;
    c->priority = priority;
    c->weight = weight;
    if (!arrival || !size || !deadline || !priority || !weight) goto bad;
    for (int64_t b = 0; b < n_blocks; b++) {
        int64_t pr;
        if (read_i64(f, &arrival[b]) || read_i64(f, &size[b]) || read_i64(f, &deadline[b]) || read_i64(f, &pr) ||
            fscanf(f, "%lf", &weight[b]) != 1)
            goto bad;
        priority[b] = (int32_t)pr;
    }
    fclose(f);
    return 0;
bad:
    fclose(f);
    return -1;
}

static void free_config(mps_config *c) {
    for (int l = 0; l < MPS_MAX_LINKS; l++) {
        free((void *)c->links[l].bw_start_ns);
        free((void *)c->links[l].bw_rate_bps);
    }
    for (int j = 0; j < MPS_MAX_SUBFLOWS; j++) {
        free((void *)c->subflows[j].delay_start_ns);
        free((void *)c->subflows[j].fwd_delay_step_ns);
        free((void *)c->subflows[j].rev_delay_step_ns);
        free((void *)c->subflows[j].down_start_ns);
        free((void *)c->subflows[j].down_end_ns);
    }
    free((void *)c->arrival_ns);
    free((void *)c->size_bytes);
    free((void *)c->deadline_ns);
    free((void *)c->priority);
    free((void *)c->weight);
}

static uint64_t mix(uint64_t h, int64_t x) {
    h ^= (uint64_t)x + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
    return h;
}

static uint64_t checksum(const mps_sim *s) {
    uint64_t h = 0;
    for (int32_t b = 0; b < s->n_blocks; b++) {
        h = mix(h, s->completion_ns[b]);
        h = mix(h, s->first_send_ns[b]);
        h = mix(h, s->blk[b].recv_bytes);
    }
    for (int j = 0; j < s->n_paths; j++) {
        h = mix(h, s->paths[j].packets_sent);
        h = mix(h, s->paths[j].srtt_ns);
    }
    return h;
}

static int run_native(const mps_config *c, const char *name, int n_params, char **params, int lookahead) {
    const mps_policy_def *def = mps_policy_find(name);
    if (!def) {
        fprintf(stderr, "unknown policy %s\n", name);
        return 2;
    }
    double param[MPS_POLICY_MAX_PARAMS];
    if (n_params != def->n_params) {
        fprintf(stderr, "policy %s takes %d parameters, %d given\n", name, def->n_params, n_params);
        return 2;
    }
    for (int k = 0; k < n_params; k++) param[k] = atof(params[k]);
    mps_sim *s = mps_sim_create(c);
    if (!s) return 3;
    mps_policy pol;
    memset(&pol, 0, sizeof pol);
    if (mps_policy_prepare(&pol, def, param, n_params, s) != 0) {
        mps_sim_free(s);
        return 3;
    }
    int rc;
    if (!lookahead) {
        rc = mps_run(s, &pol);
    } else {
        const int64_t piece_ns = 250000000;
        int64_t rates[MPS_MAX_PATHS];
        for (int j = 0; j < MPS_MAX_PATHS; j++) rates[j] = 1000000;
        for (int64_t until = piece_ns;; until += piece_ns) {
            rc = mps_run_until(s, &pol, until);
            if (rc != 0 || s->done) break;
            mps_sim *ahead = mps_sim_clone(s);
            if (!ahead) return 3;
            mps_hold_future(ahead, rates, (uint64_t)until, 0);
            mps_policy other;
            memset(&other, 0, sizeof other);
            if (mps_policy_prepare(&other, def, param, n_params, ahead) != 0) return 3;
            const int ahead_rc = mps_run(ahead, &other);
            mps_policy_free(&other);
            mps_sim_free(ahead);
            if (ahead_rc != 0) {
                rc = ahead_rc;
                break;
            }
        }
    }
    mps_policy_free(&pol);
    int64_t packets = 0;
    for (int j = 0; j < s->n_paths; j++) packets += s->paths[j].packets_sent;
    printf("policy %s rc %d packets %lld decisions %lld checksum %016llx\n", name, rc, (long long)packets,
           (long long)s->decisions, (unsigned long long)checksum(s));
    mps_sim_free(s);
    return rc == 0 ? 0 : 1;
}

/* An episode ready for the observation step: with copies on (the environment's copy
 * actions, envs/core/obs.h) it keeps flight_set. */
static void start_episode(mps_sim *s, uint64_t seed, int copies) {
    mps_sim_reset(s, seed);
    if (copies) {
        if (mps_set_copies(s, 1) != 0) return;
        mps_track_flight(s);
    }
}

static int run_steps(const mps_config *c, int K, int Pmax, int n_envs, int64_t steps, int clone_every, int copies) {
    if (K < 1 || K > 64 || Pmax < c->n_paths || Pmax > MPS_MAX_PATHS || n_envs < 1) return 2;
    const int64_t dim = mps_obs_dim(K, Pmax);
    const int actions = mps_obs_actions(copies, K);
    mps_sim **sims = calloc((size_t)n_envs, sizeof(mps_sim *));
    float *obs = malloc((size_t)(dim * n_envs) * sizeof(float));
    uint8_t *mask = malloc((size_t)(actions * n_envs));
    int32_t *slots = malloc((size_t)(K * n_envs) * sizeof(int32_t));
    if (!sims || !obs || !mask || !slots) return 3;
    double reward_sum = 0.0;
    int64_t episodes = 0;
    uint64_t state = 12345;
    for (int i = 0; i < n_envs; i++) {
        sims[i] = mps_sim_create(c);
        if (!sims[i]) return 3;
        start_episode(sims[i], c->seed + (uint64_t)i, copies);
        double r;
        uint8_t d;
        mps_obs_step(sims[i], K, Pmax, copies, K, 0, obs + i * dim, mask + i * actions, slots + i * K, &r, &d);
    }
    for (int64_t t = 0; t < steps; t++) {
        for (int i = 0; i < n_envs; i++) {
            if (clone_every > 0 && t % clone_every == clone_every - 1) {
                mps_sim *copy = mps_sim_clone(sims[i]);
                if (!copy) return 3;
                mps_sim_free(sims[i]);
                sims[i] = copy;
            }
            uint8_t *m = mask + i * actions;
            int valid = 0; /* a uniform choice among the actions the mask allows (WAIT always) */
            for (int a = 0; a < actions; a++) valid += m[a] != 0;
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            int64_t pick = (int64_t)(state % (uint64_t)valid), a = 0;
            for (;; a++)
                if (m[a] && pick-- == 0) break;
            double r = 0.0;
            uint8_t d = 0;
            if (mps_obs_step(sims[i], K, Pmax, copies, a, 0, obs + i * dim, m, slots + i * K, &r, &d) != 0) return 1;
            reward_sum += r;
            if (d) {
                episodes++;
                start_episode(sims[i], sims[i]->seed + 1000, copies);
                mps_obs_step(sims[i], K, Pmax, copies, K, 0, obs + i * dim, m, slots + i * K, &r, &d);
            }
        }
    }
    uint64_t h = 0;
    for (int i = 0; i < n_envs; i++) h = mix(h, (int64_t)checksum(sims[i]));
    printf("envs %d steps %lld episodes %lld reward %.1f checksum %016llx\n", n_envs, (long long)steps,
           (long long)episodes, reward_sum, (unsigned long long)h);
    for (int i = 0; i < n_envs; i++) mps_sim_free(sims[i]);
    free(sims);
    free(obs);
    free(mask);
    free(slots);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr,
                "usage: %s FILE run|lookahead POLICY [PARAM ...] | FILE step|step-clone|step-copies|step-copies-clone "
                "K PMAX N_ENVS STEPS\n",
                argv[0]);
        return 2;
    }
    mps_config c;
    if (read_config(argv[1], &c) != 0) {
        fprintf(stderr, "%s: cannot read the episode\n", argv[1]);
        free_config(&c);
        return 2;
    }
    char err[256];
    if (mps_config_check(&c, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        free_config(&c);
        return 2;
    }
    int rc;
    if (strcmp(argv[2], "run") == 0 || strcmp(argv[2], "lookahead") == 0)
        rc = run_native(&c, argv[3], argc - 4, argv + 4, strcmp(argv[2], "lookahead") == 0);
    else if (strncmp(argv[2], "step", 4) == 0 && argc == 7) {
        const char *mode = argv[2] + 4; /* "", "-clone", "-copies" or "-copies-clone" */
        const int copies = strncmp(mode, "-copies", 7) == 0;
        const char *rest = mode + (copies ? 7 : 0);
        rc = *rest && strcmp(rest, "-clone") != 0 ? 2
                                                  : run_steps(&c, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
                                                              atoll(argv[6]), *rest ? 97 : 0, copies);
    }
    else
        rc = 2;
    free_config(&c);
    return rc;
}
