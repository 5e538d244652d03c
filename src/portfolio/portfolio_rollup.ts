// Roll-ups over many stores (docs/portfolio.md): the metric summary's exact parts are added store by
// store (metrics/summary_parts.ts) and finished once; data-quality summaries are added count by
// count.
import type { QualitySummary } from "../domain/quality.ts";

export const NO_QUALITY: QualitySummary = {
  requested_days: 0,
  device_count: 0,
  checked_days: 0,
  agreeing_days: 0,
  flagged_days: 0,
  flagged_by_kind: { NO_DATA_WHILE_ONLINE: 0, POSITIVE_WHILE_ALL_OFFLINE: 0, ZERO_WHILE_ONLINE: 0 },
  no_evidence_days: 0,
  partial_evidence_days: 0,
  void_days: 0,
};

// Two data-quality summaries added count by count.
export const addQuality = (a: QualitySummary, b: QualitySummary): QualitySummary => ({
  requested_days: a.requested_days + b.requested_days,
  device_count: a.device_count + b.device_count,
  checked_days: a.checked_days + b.checked_days,
  agreeing_days: a.agreeing_days + b.agreeing_days,
  flagged_days: a.flagged_days + b.flagged_days,
  flagged_by_kind: {
    NO_DATA_WHILE_ONLINE: a.flagged_by_kind.NO_DATA_WHILE_ONLINE +
      b.flagged_by_kind.NO_DATA_WHILE_ONLINE,
    POSITIVE_WHILE_ALL_OFFLINE: a.flagged_by_kind.POSITIVE_WHILE_ALL_OFFLINE +
      b.flagged_by_kind.POSITIVE_WHILE_ALL_OFFLINE,
    ZERO_WHILE_ONLINE: a.flagged_by_kind.ZERO_WHILE_ONLINE + b.flagged_by_kind.ZERO_WHILE_ONLINE,
  },
  no_evidence_days: a.no_evidence_days + b.no_evidence_days,
  partial_evidence_days: a.partial_evidence_days + b.partial_evidence_days,
  void_days: a.void_days + b.void_days,
});
