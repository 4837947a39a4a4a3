/**
 * Advisory-lock keys. Session and run locks use the two-int form (class, object) so
 * they can never collide with bigint advisory locks (the partition-creation lock of
 * sweeper_ensure_day_partitions): PostgreSQL keeps the two key spaces apart.
 */
export const LOCK_CLASS = 0x53574550; // "SWEP"

export const LockObject = {
  migrate: 1,
  expire: 2,
  /** Shared by every sweep slice, exclusive while `expire` detaches mirror partitions. */
  partitions: 3,
} as const;
