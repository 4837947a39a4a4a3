-- Bounds on the arguments of sweeper_ensure_day_partitions, the SECURITY DEFINER
-- function through which the least-privilege runtime role creates day partitions.
-- Before, any caller could create partitions for any dates (400 of them in the year
-- 2100, which `expire` never drops because it only drops the past). What callers
-- really need:
--   - `migrate` and `expire`: the retention window behind (SWEEPER_RETENTION, at most
--     366 days) and up to 31 days ahead (src/db/partitions.ts partitionDays);
--   - a sweep slice: the mirror's days of the range it reads, which for a backfill of
--     old history go back as far as Stripe does (backfills start in 2010 at the earliest).
-- So: days from 2010-01-01 to 35 days after the database's UTC today (31 plus margin for
-- a clock near midnight), at most 400 days per call, never NULL. Days in the past are
-- harmless: `expire` drops those older than the retention window.
CREATE OR REPLACE FUNCTION sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date)
  RETURNS int LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  day date;
  part_name text;
  created int := 0;
  locked boolean := false;
  parent_name text := (SELECT relname FROM pg_class WHERE oid = p_parent);
  today date := (now() AT TIME ZONE 'UTC')::date;
BEGIN
  IF parent_name IS NULL OR parent_name NOT IN ('idempotency_keys', 'stripe_charges') THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: only idempotency_keys and stripe_charges have day partitions'
      USING ERRCODE = '22023';
  END IF;
  IF p_from IS NULL OR p_to IS NULL OR p_from > p_to THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: from (%) and to (%) must be days, from not after to', p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  IF p_to - p_from > 400 THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: at most 400 days per call (asked % to %)', p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  IF p_from < date '2010-01-01' OR p_to > today + 35 THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: days must lie between 2010-01-01 and % (35 days ahead); asked % to %',
      today + 35, p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  day := p_from;
  WHILE day <= p_to LOOP
    part_name := parent_name || '_p' || to_char(day, 'YYYYMMDD');
    IF to_regclass(quote_ident(part_name)) IS NULL THEN
      -- Only a caller that has something to create takes the lock (and holds it to
      -- the end of its transaction); the common case, all present, locks nothing.
      IF NOT locked THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('sweeper:partitions', 0));
        locked := true;
      END IF;
      -- A concurrent caller may have created it while we waited for the lock; the
      -- catalog lookup above may not see that yet, so "already exists" is success.
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                       part_name, p_parent,
                       (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
        IF parent_name = 'idempotency_keys' THEN
          EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (tenant_id, key)',
                         part_name, part_name || '_tenant_key');
        END IF;
        created := created + 1;
      EXCEPTION WHEN duplicate_table THEN
        NULL;
      END;
    END IF;
    day := day + 1;
  END LOOP;
  RETURN created;
END $$;
REVOKE EXECUTE ON FUNCTION sweeper_ensure_day_partitions(regclass, date, date) FROM PUBLIC;
