/* Internal: the Redis keys of one queue and the Lua scripts that change
 * several of them at once.
 *
 * Why scripts: a result must be recorded, its job id marked done and the
 * entry acknowledged as one step, or a worker dying between them would
 * leave a result without an acknowledgement (the job runs again and is
 * recorded twice) or the reverse (a job acknowledged and never recorded).
 * A script runs atomically on the server and is replicated and written to
 * the AOF as its effects. All keys of a queue share the hash tag {NAME}, so
 * the scripts also work on a Redis Cluster. */
#ifndef PF_QUEUE_KEYS_H
#define PF_QUEUE_KEYS_H

#include <stdbool.h>

#include "pixflow/core.h"

#define PF_QUEUE_NAME_MAX 64
#define PF_QUEUE_GROUP "workers"

typedef struct pf_queue_keys {
    char jobs[96], results[96], dead[96], done[96], delayed[96], workers[96];
} pf_queue_keys;

/* Checks the name (1..64 of [A-Za-z0-9._-]) and fills the key names. */
pf_status pf_queue_keys_make(const char *name, pf_queue_keys *k);

/* PF_ERR_UNSUPPORTED with the message of builds without hiredis. */
pf_status pf_queue_unsupported(void);

/* Creates the consumer group (and the stream) when missing (admin.c). */
struct pf_conn;
pf_status pf_queue_ensure_group(struct pf_conn *c, const pf_queue_keys *k);

/* KEYS: jobs done results. ARGV: group entry_id job_id result_json.
 * Records the result unless the job id is already done; always acknowledges
 * and deletes the entry. Returns 1 when recorded, 0 for a duplicate. */
#define PF_LUA_COMPLETE \
    "local new = redis.call('SADD', KEYS[2], ARGV[3])\n" \
    "if new == 1 then redis.call('XADD', KEYS[3], '*', 'result', ARGV[4]) end\n" \
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n" \
    "redis.call('XDEL', KEYS[1], ARGV[2])\n" \
    "return new\n"

/* owned(id, consumer): whether the entry is still pending on this consumer.
 * A job claimed away from a slow worker belongs to its new owner, and the
 * old one must neither retry, dead-letter nor hand it back. */
#define PF_LUA_OWNED \
    "local function owned(id, consumer)\n" \
    "  local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, consumer)\n" \
    "  return #p > 0\n" \
    "end\n"

/* KEYS: jobs delayed. ARGV: group entry_id consumer delay_ms job_json.
 * Schedules the retry at server time + delay (one clock for every worker). */
#define PF_LUA_RETRY \
    PF_LUA_OWNED \
    "if not owned(ARGV[2], ARGV[3]) then return 0 end\n" \
    "local t = redis.call('TIME')\n" \
    "local due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4])\n" \
    "redis.call('ZADD', KEYS[2], due, ARGV[5])\n" \
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n" \
    "redis.call('XDEL', KEYS[1], ARGV[2])\n" \
    "return 1\n"

/* KEYS: jobs dead results. ARGV: group entry_id consumer raw error job_id
 * worker result_json(or ''). */
#define PF_LUA_DEAD \
    PF_LUA_OWNED \
    "if not owned(ARGV[2], ARGV[3]) then return 0 end\n" \
    "redis.call('XADD', KEYS[2], '*', 'job', ARGV[4], 'error', ARGV[5], 'id', ARGV[6], " \
    "'worker', ARGV[7])\n" \
    "if ARGV[8] ~= '' then redis.call('XADD', KEYS[3], '*', 'result', ARGV[8]) end\n" \
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n" \
    "redis.call('XDEL', KEYS[1], ARGV[2])\n" \
    "return 1\n"

/* KEYS: jobs. ARGV: group entry_id consumer job_json. Puts the job back at
 * the end of the stream (attempt unchanged) and drops this delivery. */
#define PF_LUA_HANDBACK \
    PF_LUA_OWNED \
    "if not owned(ARGV[2], ARGV[3]) then return 0 end\n" \
    "redis.call('XADD', KEYS[1], '*', 'job', ARGV[4])\n" \
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n" \
    "redis.call('XDEL', KEYS[1], ARGV[2])\n" \
    "return 1\n"

/* KEYS: jobs workers. ARGV: group consumer worker_name id... The heartbeat:
 * stamps the worker (server time, ms) and resets the idle time of each of
 * its running entries still pending on it (XCLAIM to itself), so no other
 * worker claims a job that is making progress. Returns one 0/1 per id. */
#define PF_LUA_HEARTBEAT \
    PF_LUA_OWNED \
    "local t = redis.call('TIME')\n" \
    "redis.call('HSET', KEYS[2], ARGV[3], tonumber(t[1]) * 1000 + " \
    "math.floor(tonumber(t[2]) / 1000))\n" \
    "local out = {}\n" \
    "for i = 4, #ARGV do\n" \
    "  if owned(ARGV[i], ARGV[2]) then\n" \
    "    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')\n" \
    "    out[#out + 1] = 1\n" \
    "  else out[#out + 1] = 0 end\n" \
    "end\n" \
    "return out\n"

/* KEYS: delayed jobs. ARGV: limit. Moves retries that are due into the
 * stream; returns how many retries were waiting (due or not). */
#define PF_LUA_PROMOTE \
    "local t = redis.call('TIME')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, " \
    "tonumber(ARGV[1]))\n" \
    "for _, m in ipairs(due) do\n" \
    "  redis.call('XADD', KEYS[2], '*', 'job', m)\n" \
    "  redis.call('ZREM', KEYS[1], m)\n" \
    "end\n" \
    "return #due + redis.call('ZCARD', KEYS[1])\n"

/* KEYS: jobs delayed done dead results workers. ARGV: group alive_ms.
 * {waiting, running, retrying, done, dead, results, workers alive}. */
#define PF_LUA_COUNTS \
    "local xlen = redis.call('XLEN', KEYS[1])\n" \
    "local pending = 0\n" \
    "if redis.call('EXISTS', KEYS[1]) == 1 then\n" \
    "  local p = redis.pcall('XPENDING', KEYS[1], ARGV[1])\n" \
    "  if type(p) == 'table' and p.err == nil then pending = p[1] end\n" \
    "end\n" \
    "local t = redis.call('TIME')\n" \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "local alive = 0\n" \
    "local w = redis.call('HGETALL', KEYS[6])\n" \
    "for i = 2, #w, 2 do\n" \
    "  if now - tonumber(w[i]) < tonumber(ARGV[2]) then alive = alive + 1 end\n" \
    "end\n" \
    "return {xlen - pending, pending, redis.call('ZCARD', KEYS[2]), " \
    "redis.call('SCARD', KEYS[3]), redis.call('XLEN', KEYS[4]), redis.call('XLEN', KEYS[5]), " \
    "alive}\n"

/* KEYS: dead jobs. ARGV: entry_id new_job_json. Moves one dead letter back. */
#define PF_LUA_REVIVE \
    "if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then return 0 end\n" \
    "redis.call('XADD', KEYS[2], '*', 'job', ARGV[2])\n" \
    "return 1\n"

#endif
