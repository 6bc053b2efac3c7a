/**
 * What verify's hot path did, counted in process so tests and the benchmark can check it
 * (`GET /internal/v1/metrics`), rather than trusting a reading of the code.
 */
export class VerifyMetrics {
  /** Decisions answered (ALLOW or DENY). */
  verifications = 0;
  /** Mandates taken from a usable snapshot. */
  snapshotHits = 0;
  /** No snapshot, or one below its fence: the mandate was read from the mandates service. */
  snapshotMisses = 0;
  /** The snapshot store failed or held garbage; read from the mandates service instead. */
  snapshotErrors = 0;
  /** Snapshots ignored because their MAC was missing or wrong (a write to Redis not by the mandates service). */
  snapshotMacFailures = 0;
  /** HTTP reads of the mandates service (the only way verify reaches MongoDB or anything behind it). */
  mandatesReads = 0;
  /** Events handed to the publisher. */
  eventsPublished = 0;
  /** Publish calls that reached the broker adapter (one per batch when batching). */
  brokerPublishes = 0;

  snapshot() {
    return {
      verifications: this.verifications,
      snapshot_hits: this.snapshotHits,
      snapshot_misses: this.snapshotMisses,
      snapshot_errors: this.snapshotErrors,
      snapshot_mac_failures: this.snapshotMacFailures,
      mandates_reads: this.mandatesReads,
      events_published: this.eventsPublished,
      broker_publishes: this.brokerPublishes,
    };
  }
}
