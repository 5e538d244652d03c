/// <reference lib="dom" />
// A store's savings: the savings panel (EBA − actual per day or summed, the TES targets on the same
// axis, the stages shaded, each target's verdict over the range said once) and the monthly totals
// beside the same month a year earlier (GET /stores/{id}/months, summed exactly by the service).
import { useState } from "preact/hooks";
import type { Load } from "../ui.ts";
import type { MetricsResponse, MetricSummary, MonthRow, MonthsResponse } from "../api.ts";
import { get } from "../api.ts";
import { SavingsChart, savingsCount } from "../chart.ts";
import { type Key, language, t } from "../i18n.ts";
import { DIGITS } from "../format.ts";
import {
  formatCount,
  historyNotKept,
  html,
  Loaded,
  NumCell,
  Table,
  useLoad,
  withUnit,
} from "../ui.ts";

// Each verdict of the range's summary as one phrase: "TES-180: not met".
const VERDICTS: ReadonlyArray<readonly [keyof MetricSummary, string | Key]> = [
  ["eba_pass", "EBA"],
  ["tes_pass", "tes"],
  ["tes_180_pass", "tes180"],
  ["tes_210_pass", "tes210"],
  ["tev_pass", "tev"],
];

const Verdicts = (props: { summary: MetricSummary }) =>
  html`
    <ul class="verdicts" aria-label=${t("verdictsLabel")} data-testid="verdicts">
      ${VERDICTS.map(([field, label]) => {
        const value = props.summary[field] as boolean | null;
        const target = label === "EBA" ? "EBA" : t(label as Key);
        const verdict = value === null ? t("notJudged") : value ? t("met") : t("notMet");
        return html`
          <li class=${value === null ? "flag dash" : value ? "flag pass" : "flag fail"}
            data-testid="verdict" data-field=${field}>${t("verdict", { target, verdict })}</li>
        `;
      })}
    </ul>
  `;

export const SavingsSection = (props: { load: Load<MetricsResponse>; retry: () => void }) => {
  const [cumulative, setCumulative] = useState(false);
  return html`
    <section aria-labelledby="savings-title" data-testid="savings">
      <h2 id="savings-title">${t("savingsTitle")}</h2>
      <p class="muted">${t("savingsIntro")}</p>
      <${Loaded} load=${props.load} retry=${props.retry} saidAbove=${historyNotKept}>${(
        m: MetricsResponse,
      ) => {
        const counted =
          m.days.filter((d) => d.actual_kwh !== null && d.eba_kwh !== null && savingsCount(d.stage))
            .length;
        return html`
          <${Verdicts} summary=${m.summary} />
          <div class="savings-mode" role="group" aria-label=${t("savingsMode")}>
            <label><input type="radio" name="savings-mode" value="daily" checked=${!cumulative}
              onChange=${() => setCumulative(false)} data-testid="savings-daily" /> ${t(
                "savingsDaily",
              )}</label>
            <label><input type="radio" name="savings-mode" value="cumulative" checked=${cumulative}
              onChange=${() => setCumulative(true)} data-testid="savings-cumulative" /> ${t(
                "savingsCumulative",
              )}</label>
          </div>
          ${counted === 0
            ? html`<p class="notice" role="status" data-testid="savings-none">${
              t(
                "savingsNone",
              )
            }</p>`
            : ""}
          <${SavingsChart} days=${m.days} cumulative=${cumulative} />
          <p class="muted" data-testid="savings-days">${t("savingsDays", {
            counted,
            requested: m.days.length,
          })}</p>
        `;
      }}<//>
    </section>
  `;
};

// A month as people write it ("Jul 2026", "2026年7月").
const monthName = (month: string) =>
  new Intl.DateTimeFormat(language(), { year: "numeric", month: "short", timeZone: "UTC" })
    .format(new Date(`${month}-01T00:00:00Z`));

const lastDay = (month: string) => {
  const d = new Date(`${month}-01T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() + 1, 0);
  return d.toISOString().slice(0, 10);
};

// A month cut by the range says which of its days it covers.
const MonthHead = (props: { row: MonthRow }) => {
  const r = props.row;
  if (r.month === null) return html`<th scope="row">${t("monthsTotal")}</th>`;
  const whole = r.start === `${r.month}-01` && r.end === lastDay(r.month);
  return html`<th scope="row" data-month=${r.month}>${monthName(r.month)}${
    whole
      ? ""
      : html`<span class="muted part">${
        withUnit("", `${r.start.slice(8)}–${r.end.slice(8)}`)
      }</span>`
  }</th>`;
};

// Savings have no negative decimal (rules.md §1): a span that used more than its baseline says so.
const SavingsCell = (props: { summary: MetricSummary }) =>
  props.summary.aes_kwh === null && props.summary.eba_pass === false
    ? html`<td class="num" data-testid="month-aes"><span class="flag fail">${
      t(
        "overBaseline",
      )
    }</span></td>`
    : html`<${NumCell} value=${props.summary.aes_kwh} digits=${DIGITS.total} unit="kWh" testid="month-aes" />`;

const MonthLine = (props: { row: MonthRow; total?: boolean }) => {
  const s = props.row.summary;
  const earlier = props.row.year_earlier;
  return html`
    <tr data-testid=${props.total ? "months-total" : "month-row"} class=${props.total
      ? "total"
      : ""}>
      <${MonthHead} row=${props.row} />
      <${NumCell} value=${s.actual_kwh} digits=${DIGITS.total} unit="kWh" testid="month-actual" />
      <${NumCell} value=${s.matched_eba_kwh} digits=${DIGITS.total} unit="kWh" testid="month-eba" />
      <${SavingsCell} summary=${s} />
      <${NumCell} value=${s.aer_percent} digits=${DIGITS.percent} unit="%" />
      <td class="num" title=${t("pfMatchedTitle", {
        matched: s.matched_days,
        requested: s.requested_days,
      })}>${formatCount(s.matched_days)} / ${formatCount(s.requested_days)}</td>
      ${earlier === null ? html`<td class="num"><span class="dash">${t("none")}</span></td>` : html`
        <${NumCell} value=${earlier.summary.actual_kwh} digits=${DIGITS.total}
          unit=${withUnit("kWh", `${earlier.start} – ${earlier.end}`)} testid="month-earlier" />
      `}
    </tr>
  `;
};

export const MonthsSection = (
  props: { storeId: number; scopeId: number; start: string; end: string; asOfQuery: string },
) => {
  const q = `scope_id=${props.scopeId}&start=${props.start}&end=${props.end}${props.asOfQuery}`;
  const months = useLoad(
    (signal) => get<MonthsResponse>(`/api/v1/stores/${props.storeId}/months?${q}`, signal),
    [props.storeId, q],
  );
  const caption = t("monthsCaption", { start: props.start, end: props.end });
  return html`
    <section aria-labelledby="months-title" data-testid="months">
      <h2 id="months-title">${t("monthsTitle")}</h2>
      <${Loaded} load=${months.load} retry=${months.reload} saidAbove=${historyNotKept}>${(
        m: MonthsResponse,
      ) =>
        html`
          <${Table} caption=${caption} head=${[
            t("colMonth"),
            t("colActual"),
            t("colEba"),
            t("colAes"),
            t("colAer"),
            t("colMatched"),
            t("colYearEarlier"),
          ]}>
            ${m.months.map((row) => html`<${MonthLine} row=${row} />`)}
            <${MonthLine} row=${m.total} total=${true} />
          <//>
          <p class="muted">${t("monthsHint")}</p>
        `}<//>
    </section>
  `;
};
