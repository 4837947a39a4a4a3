/**
 * Advisory-lock keys. Session and run locks use the two-int form (class, object) so
 * they can never collide with bigint advisory locks (the partition-creation lock, and
 * the per-claim locks of `sweeper_claim_lock_key` before migration 010): PostgreSQL
 * keeps the two key spaces apart.
 */
export const LOCK_CLASS = 0x53574550; // "SWEP"

export const LockObject = {
  migrate: 1,
  expire: 2,
  /** Shared by every sweep slice, exclusive while `expire` detaches mirror partitions. */
  partitions: 3,
} as const;
