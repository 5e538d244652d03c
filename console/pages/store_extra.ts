/// <reference lib="dom" />
// More of a store's page: the data-quality cross-check of the range (days whose energy disagrees
// with the devices' reports, with the evidence), the range as a file in the import layout, and
// the profile's audit log (raw permission).
import { type AuditLog, get, type QualityFlag, type QualityResponse } from "../api.ts";
import { DIGITS } from "../format.ts";
import { type Key, t, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import {
  Code,
  Download,
  formatCount,
  html,
  instant,
  labelOf,
  listed,
  Loaded,
  NumCell,
  Table,
  useLoad,
  When,
  withUnit,
  withZone,
} from "../ui.ts";

// Each device's state that day in words, with the time of its first report in the dataset's zone
// (the column's heading names the zone).
const evidence = (f: QualityFlag) =>
  listed(
    f.devices.map((d) => {
      const state = `${labelOf(d.device_name ?? d.device_code)}${words(d.state)}`;
      return d.reports[0] === undefined
        ? state
        : withUnit(state, instant(d.reports[0].occurred_at));
    }),
    true,
  ) + (f.device_count > f.devices.length ? " …" : "");

// `asOf`: the page shows numbers as they were known at an earlier instant, while the check and the
// export read the data as it is now: they say so.
export const QualitySection = (
  props: { storeId: number; scopeId: number; start: string; end: string; asOf?: boolean },
) => {
  const { load, reload } = useLoad(
    (signal) =>
      get<QualityResponse>(
        `/api/v1/stores/${props.storeId}/quality?scope_id=${props.scopeId}&start=${props.start}&end=${props.end}`,
        signal,
      ),
    [props.storeId, props.scopeId, props.start, props.end],
  );
  return html`
    <section aria-labelledby="quality-title" data-testid="quality">
      <h2 id="quality-title">${t("qualityCheckTitle")}</h2>
      ${props.asOf && html`<p class="notice" data-testid="quality-current">${t("currentData")}</p>`}
      <${Loaded} load=${load} retry=${reload}>${(q: QualityResponse) =>
        html`
          <p role="status" data-testid="quality-summary">${t("qualitySummary", {
            checked: formatCount(q.summary.checked_days),
            agreeing: formatCount(q.summary.agreeing_days),
            flagged: formatCount(q.summary.flagged_days),
            none: formatCount(q.summary.no_evidence_days),
          })}</p>
          ${q.flags.length > 0 && html`
            <${Table} caption=${t("qualityCheckTitle")} head=${[
              t("date"),
              t("qualityKind"),
              t("kwh"),
              withZone(t("qualityEvidence")),
            ]}>
              ${q.flags.map((f) =>
                html`
                  <tr data-testid="quality-flag">
                    <th scope="row">${f.business_date}</th>
                    <td>
                      <${Code} code=${f.kind} />
                    </td>
                    <${NumCell} value=${f.energy_kwh} digits=${DIGITS.kwh} unit="kWh" />
                    <td>${evidence(f)}</td>
                  </tr>
                `
              )}
            <//>
          `}
          <p class="muted">${t("qualityNever")}</p>
        `}<//>
    </section>
  `;
};

// Links that download the range as a file the import reads back.
export const ExportLinks = (
  props: { start: string; end: string; storeIds?: ReadonlyArray<number>; asOf?: boolean },
) => {
  const base = `/api/v1/stores/export?start=${props.start}&end=${props.end}${
    props.storeIds === undefined ? "" : `&store_ids=${props.storeIds.join(",")}`
  }`;
  return html`
    <p class="export" data-testid="export-links">
      <span>${t("exportLabel")}</span>
      <${Download} href=${`${base}&format=xlsx`} testid="export-xlsx">XLSX<//>
      <${Download} href=${`${base}&format=csv`} testid="export-csv">CSV<//>
      <${Download} href=${`${base}&format=xlsx&legacy=values`}>${t("exportWithLegacy")}<//>
      <span class="muted">${t("exportHint")}</span>
      ${props.asOf &&
        html`<span class="notice" data-testid="export-current">${t("currentData")}</span>`}
    </p>
  `;
};

// The profile fields an audit entry records, by their names in words.
const FIELD_WORDS: Readonly<Record<string, Key>> = {
  name: "name",
  address: "address",
  version: "version",
};
const fields = (o: Readonly<Record<string, unknown>> | null) =>
  o === null ? t("none") : listed(
    Object.entries(o).map(([k, v]) =>
      `${labelOf(FIELD_WORDS[k] === undefined ? k : t(FIELD_WORDS[k]))}${v ?? t("none")}`
    ),
    true,
  );

export const AuditSection = (props: { session: Session; storeId: number }) => {
  if (!props.session.may("raw")) return null;
  const { load, reload } = useLoad(
    (signal) => get<AuditLog>(`/api/v1/stores/${props.storeId}/audit?limit=200`, signal),
    [props.storeId],
  );
  return html`
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">${t("auditTitle")}</h2>
      <${Loaded} load=${load} retry=${reload}>${(value: AuditLog) =>
        value.entries.length === 0 ? html`<p class="muted">${t("auditEmpty")}</p>` : html`
          <${Table} caption=${t("auditTitle")} head=${[
            withZone(t("when")),
            t("operation"),
            t("actor"),
            t("before"),
            t("after"),
          ]}>
            ${value.entries.map((e) =>
              html`
                <tr data-testid="audit-row">
                  <th scope="row">
                    <${When} at=${e.created_at} />
                  </th>
                  <td>
                    <${Code} code=${e.action} />
                  </td>
                  <td>${e.actor === null
                    ? t("none")
                    : e.actor.display_name ?? e.actor.login_name}</td>
                  <td>${fields(e.before)}</td>
                  <td>${fields(e.after)}</td>
                </tr>
              `
            )}
          <//>
        `}<//>
    </section>
  `;
};
