/// <reference lib="dom" />
// One store-day (raw permission): its current value, every version with who and which batch, its
// revision history, and from a revision the import row's lineage back to the sealed source.
import { useState } from "preact/hooks";
import {
  type EnergyVersions,
  get,
  type HistoryResponse,
  type Lineage,
  type StoresResponse,
} from "../api.ts";
import { DIGITS } from "../format.ts";
import { sourceWords, t, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import {
  Code,
  html,
  Link,
  Loaded,
  Num,
  show,
  Table,
  useLoad,
  useTitle,
  When,
  withUnit,
  withZone,
} from "../ui.ts";

const cellOf = (reference: Record<string, unknown> | null) => {
  if (reference === null) return t("platformPath");
  const row = reference.row as number | undefined;
  const column = reference.column as string | undefined;
  if (row === undefined || column === undefined) return t("platformPath");
  return typeof reference.sheet === "string"
    ? t("sheetRowCol", { sheet: reference.sheet, row, column })
    : t("csvRowCol", { row, column });
};

// The served value before or after a revision: a void day says so (its kWh is null then, as is
// the value before a day's first revision).
const served = (kwh: string | null, isVoid: 0 | 1 | null) =>
  isVoid === 1 ? words("VOID") : html`<${Num} value=${kwh} digits=${DIGITS.kwh} unit="kWh" />`;

// The first cells of a revision's row, in the versions and in the history alike.
const revisionCells = (r: {
  readonly revision_no: number;
  readonly operation: string;
  readonly before_kwh: string | null;
  readonly before_is_void: 0 | 1 | null;
  readonly after_kwh: string | null;
  readonly after_is_void: 0 | 1 | null;
}) =>
  html`
    <th scope="row">${r.revision_no}</th>
    <td>
      <${Code} code=${r.operation} />
    </td>
    <td class="num">${served(r.before_kwh, r.before_is_void)}</td>
    <td class="num">${served(r.after_kwh, r.after_is_void)}</td>
  `;

const LineageView = (props: { importRowId: number; batchNo: string | null }) => {
  const lineage = useLoad(
    (signal) => get<Lineage>(`/api/v1/import-rows/${props.importRowId}/lineage`, signal),
    [props.importRowId],
  );
  return html`
    <section class="lineage" aria-labelledby="lineage-title" data-testid="lineage">
      <h3 id="lineage-title">${t("lineage")}</h3>
      <${Loaded} load=${lineage.load} retry=${lineage.reload}>${(l: Lineage) =>
        html`
          <dl class="profile">
            <div>
              <dt>${t("batch")}</dt>
              <dd>
                <${Link} href=${`/console/imports/${l.batch_id}`}>${props.batchNo ??
                  l.batch_id}<//></dd></div>
                  <div><dt>${t("action")}</dt><dd><${Code} code=${l.action} /></dd></div>
                  <div><dt>${t("brand")} / ${t("store")}</dt><dd>${show(l.raw_brand)} / ${show(
                    l.raw_store_name,
                  )}</dd></div>
                  <div><dt>${t("date")}</dt><dd>${show(l.raw_date)}</dd></div>
                  <div><dt>${t("kwh")}</dt><dd>${show(l.raw_energy)}</dd></div>
                  <div><dt>${t("cell")}</dt><dd data-testid="lineage-cell">${cellOf(
                    l.source_reference,
                  )}</dd></div>
                </dl>
                ${l.sources.map((s) =>
                  html`
                    <dl class="profile source">
                      <div>
                        <dt>${t("file")}</dt>
                        <dd data-testid="lineage-file">${show(
                          (s.record.filename as string | undefined) ?? s.explanation,
                        )}</dd>
                      </div>
                      <div>
                        <dt>${t("source")}</dt>
                        <dd><${Code} code=${s.source_kind} /> · ${s.source_table}</dd>
                      </div>
                      <div>
                        <dt>${t("sha")}</dt>
                        <dd class="mono" data-testid="lineage-sha">${s.file_sha256}</dd>
                      </div>
                      <div>
                        <dt>${t("record")}</dt>
                        <dd class="mono">${JSON.stringify(s.record)}</dd>
                      </div>
                    </dl>
                  `
                )}
        `}<//>
      </section>
  `;
};

// The store page a day was opened from: its range and the instant it was read as of, kept in the
// day's address so that its back link returns to that view.
const STORE_VIEW = ["start", "end", "known_at", "data_token"] as const;
export const storeViewQuery = (query: URLSearchParams) => {
  const kept = new URLSearchParams();
  for (const name of STORE_VIEW) {
    const value = query.get(name);
    if (value !== null) kept.set(name, value);
  }
  const text = kept.toString();
  return text === "" ? "" : `?${text}`;
};

export const DayPage = (
  props: { session: Session; storeId: number; date: string; query: URLSearchParams },
) => {
  const [traced, setTraced] = useState<{ row: number; batchNo: string | null } | null>(null);
  // The store by its name; its number only while the list loads or when the key may not see it.
  const stores = useLoad((signal) => get<StoresResponse>("/api/v1/stores", signal), []);
  const storeName =
    (stores.load.state === "ready"
      ? stores.load.value.stores.find((s) => s.id === props.storeId)?.name
      : undefined) ?? `${t("store")} ${props.storeId}`;
  const title = t("dayTitle", { date: props.date, store: storeName });
  useTitle(title);
  const versions = useLoad(
    (signal) =>
      get<EnergyVersions>(`/api/v1/stores/${props.storeId}/energy/${props.date}/versions`, signal),
    [props.storeId, props.date],
  );
  const energyId = versions.load.state === "ready"
    ? versions.load.value.current?.energy_id
    : undefined;
  // The history is shown only for a fact whose versions could be read (a refusal above is not
  // "no revision").
  const history = useLoad(
    (signal) =>
      energyId === undefined
        ? Promise.resolve<HistoryResponse>({ revisions: [] })
        : get<HistoryResponse>(`/api/v1/energy/${energyId}/history`, signal),
    [energyId],
  );
  return html`
    <p>
      <${Link} href=${`/console/stores/${props.storeId}${
        storeViewQuery(props.query)
      }`} testid="day-back">← ${storeName}<//></p>
        <h1 tabindex="-1" data-testid="day-title">${title}</h1>
        <${Loaded} load=${versions.load} retry=${versions.reload}>${(v: EnergyVersions) =>
          v.current === null ? html`<p class="muted">${t("noFact")}</p>` : html`
            <dl class="summary" data-testid="current">
              <div>
                <dt>${t("current")}</dt>
                <dd>${v.current.is_void === 1 ? words("VOID") : html`
                  <${Num} value=${v.current.energy_kwh} digits=${DIGITS.kwh} unit="kWh"
                    testid="current-kwh" />
                `}${v.current.energy_kwh === null ? "" : " kWh"}</dd>
              </div>
              <div>
                <dt>${t("source")}</dt>
                <dd title=${v.current.source_label ?? undefined}>${sourceWords(
                  v.current.is_void === 1 ? "VOID" : null,
                  v.current.source_kind,
                )}</dd>
              </div>
              <div>
                <dt>${t("quality")}</dt>
                <dd>
                  <${Code} code=${v.current.quality_status} />
                </dd>
              </div>
              <div>
                <dt>${t("note")}</dt>
                <dd>${show(v.current.quality_note)}</dd>
              </div>
              <div>
                <dt>${t("revision")}</dt>
                <dd>${v.current.revision_no}</dd>
              </div>
            </dl>
            <${Table}
              caption=${t("versions")}
              head=${[
                t("revision"),
                t("operation"),
                withUnit(t("before"), "kWh"),
                withUnit(t("after"), "kWh"),
                t("source"),
                t("actor"),
                t("batch"),
                withZone(t("committed")),
                t("reason"),
                t("traceColumn"),
              ]}
            >
                      ${v.versions.map((r) =>
                        html`
                          <tr data-testid="version-row">
                          ${revisionCells(r)}
                                                      <td title=${r.source_label}>${words(
                                                        r.source_kind,
                                                      )}</td>
                                                      <td>${r.actor.label === null
                                                        ? show(null)
                                                        : r.actor.member_id === null
                                                        ? t("platformLoad")
                                                        : show(r.actor.label)}</td>
                                                      <td>${r.batch === null
                                                        ? t("none")
                                                        : html`${r.batch.batch_no}${
                                                          r.batch.filename
                                                            ? withUnit("", r.batch.filename)
                                                            : ""
                                                        }`}</td>
                                                      <td>
                                                        <${When} at=${r
                                                          .committed_at} testid="version-at" />
                                                      </td>
                                                      <td>${show(r.change_reason)}</td>
                                                      <td><button type="button" onClick=${() =>
                                                        setTraced({
                                                          row: r.import_row_id,
                                                          batchNo: r.batch?.batch_no ?? null,
                                                        })}>${t("showLineage")}</button></td>
                                                    </tr>
                        `
                      )}
                    <//>
          `}<//>
        ${traced !== null &&
          html`<${LineageView} key=${traced.row} importRowId=${traced.row} batchNo=${traced.batchNo} />`}
        ${energyId !== undefined && html`
          <h2>${t("history")}</h2>
          <${Loaded} load=${history.load} retry=${history.reload}>${(h: HistoryResponse) =>
            html`<${Table} caption=${t("history")} head=${[
              t("revision"),
              t("operation"),
              withUnit(t("before"), "kWh"),
              withUnit(t("after"), "kWh"),
              t("source"),
              withZone(t("committed")),
              t("reason"),
            ]}>
        ${
              h.revisions.map((r) =>
                html`
                  <tr data-testid="history-row">
                  ${revisionCells(r)}
                                      <td>${words(r.source_kind)}</td>
                                      <td>
                                        <${When} at=${r.committed_at} />
                                      </td>
                                      <td>${r.change_reason}</td>
                                    </tr>
                `
              )
            }
      <//>`}<//>
        `}
  `;
};
