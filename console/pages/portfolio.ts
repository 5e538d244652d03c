/// <reference lib="dom" />
// The portfolio, the page a person lands on: every store's savings over a range, sortable, with
// quick filters for the failing and the incomplete stores, and the roll-ups per brand, per city
// and in total (GET /api/v1/portfolio). What the page shows (range, brand, city, quick filter,
// sort) lives in the URL only, so Back, Forward, a reload and a shared link show the same view.
import { useEffect, useRef, useState } from "preact/hooks";
import {
  ApiError,
  get,
  type MetricSummary,
  type PortfolioResponse,
  type PortfolioStore,
  type QualitySummary,
} from "../api.ts";
import { type Key, language, t } from "../i18n.ts";
import type { Session } from "../main.ts";
import { aboveBaseline, DIGITS } from "../format.ts";
import {
  addDays,
  daysBetween,
  Download,
  formatCount,
  html,
  isDate,
  labelOf,
  Link,
  Loaded,
  navigate,
  NumCell,
  rangeOfForm,
  useLoad,
  useTitle,
} from "../ui.ts";

// The service's limit for one portfolio read.
const PORTFOLIO_MAX_DAYS = 366;

const FLAGS = ["eba_pass", "tes_pass", "tes_180_pass", "tes_210_pass", "tev_pass"] as const;
type FlagField = typeof FLAGS[number];
const FLAG_LABEL: Record<FlagField, Key> = {
  eba_pass: "ebaPass",
  tes_pass: "tesPass",
  tes_180_pass: "tes180Pass",
  tes_210_pass: "tes210Pass",
  tev_pass: "tevPass",
};

// --- The view, read from and written to the query string.

type Show = "failing" | "incomplete";
type Dir = "asc" | "desc";

const SORT_KEYS = [
  "name",
  "brand",
  "city",
  "actual",
  "eba",
  "aes",
  "aer",
  ...FLAGS,
  "matched",
  "provisional",
  "quality",
] as const;
type SortKey = typeof SORT_KEYS[number];

interface View {
  readonly start: string;
  readonly end: string;
  readonly brand: number | null;
  readonly city: string | null;
  readonly show: Show | null;
  readonly sort: SortKey | null;
  readonly dir: Dir;
}

// The default range: the last 365 days of the dataset (from its first day when it is shorter).
const defaultRange = (session: Session) => {
  const { start: first, end } = session.dataset;
  const start = addDays(end, -364);
  return { start: start < first ? first : start, end };
};

const viewOf = (session: Session, query: URLSearchParams): View => {
  const fallback = defaultRange(session);
  const start = query.get("start");
  const end = query.get("end");
  const brand = Number(query.get("brand_id"));
  const city = query.get("city");
  const show = query.get("show");
  const sort = query.get("sort");
  return {
    start: isDate(start) ? start : fallback.start,
    end: isDate(end) ? end : fallback.end,
    brand: Number.isSafeInteger(brand) && brand > 0 ? brand : null,
    city: city === null || city === "" ? null : city,
    show: show === "failing" || show === "incomplete" ? show : null,
    sort: (SORT_KEYS as ReadonlyArray<string>).includes(sort ?? "") ? sort as SortKey : null,
    dir: query.get("dir") === "desc" ? "desc" : "asc",
  };
};

const urlOf = (view: View) => {
  const query = new URLSearchParams({ start: view.start, end: view.end });
  if (view.brand !== null) query.set("brand_id", String(view.brand));
  if (view.city !== null) query.set("city", view.city);
  if (view.show !== null) query.set("show", view.show);
  if (view.sort !== null) {
    query.set("sort", view.sort);
    query.set("dir", view.dir);
  }
  return `/console/portfolio?${query}`;
};

const rangeProblem = (view: View) =>
  view.start > view.end
    ? t("rangeOrder")
    : daysBetween(view.start, view.end) > PORTFOLIO_MAX_DAYS
    ? t("rangeTooLong")
    : null;

// --- Which stores a quick filter keeps.

const failing = (s: PortfolioStore) => FLAGS.some((f) => s.summary[f] === false);
const incomplete = (s: PortfolioStore) => s.summary.matched_days < s.summary.requested_days;

// --- Sorting: text in the language's order, decimals compared exactly as strings, a pass flag
// "not met" before "met"; a missing value always last; ties in the service's order (store id).

const compareDecimal = (a: string, b: string): number => {
  const negative = (x: string) => x.startsWith("-");
  if (negative(a) !== negative(b)) return negative(a) ? -1 : 1;
  const sign = negative(a) ? -1 : 1;
  const parts = (x: string) => {
    const [whole, fraction = ""] = x.replace("-", "").split(".");
    return [whole.replace(/^0+(?=\d)/, ""), fraction] as const;
  };
  const [aw, af] = parts(a);
  const [bw, bf] = parts(b);
  if (aw.length !== bw.length) return sign * (aw.length - bw.length);
  const width = Math.max(af.length, bf.length);
  const ad = aw + af.padEnd(width, "0");
  const bd = bw + bf.padEnd(width, "0");
  return ad === bd ? 0 : sign * (ad < bd ? -1 : 1);
};

type SortValue = string | number | boolean | null;
const sortValue = (s: PortfolioStore, key: SortKey): SortValue => {
  switch (key) {
    case "name":
      return s.name;
    case "brand":
      return s.brand_name;
    case "city":
      return s.city;
    case "actual":
      return s.summary.actual_kwh;
    case "eba":
      return s.summary.matched_eba_kwh;
    // Above the baseline is worse than any savings: first when the worst come first.
    case "aes":
      return aboveBaseline(s.summary) ? "-1" : s.summary.aes_kwh;
    case "aer":
      return aboveBaseline(s.summary) ? "-1" : s.summary.aer_percent;
    case "matched":
      return s.summary.matched_days;
    case "provisional":
      return s.provisional_days;
    case "quality":
      return s.data_quality.flagged_days;
    default:
      return s.summary[key];
  }
};
const DECIMAL_KEYS: ReadonlyArray<SortKey> = ["actual", "eba", "aes", "aer"];

const sorted = (stores: ReadonlyArray<PortfolioStore>, key: SortKey | null, dir: Dir) => {
  if (key === null) return stores;
  const collator = new Intl.Collator(language());
  const compare = (a: SortValue, b: SortValue) =>
    typeof a === "number" && typeof b === "number"
      ? a - b
      : typeof a === "boolean" && typeof b === "boolean"
      ? Number(a) - Number(b)
      : DECIMAL_KEYS.includes(key)
      ? compareDecimal(String(a), String(b))
      : collator.compare(String(a), String(b));
  return [...stores].sort((x, y) => {
    const a = sortValue(x, key);
    const b = sortValue(y, key);
    if (a === null || b === null) {
      return a === b ? x.store_id - y.store_id : a === null ? 1 : -1;
    }
    const order = compare(a, b) * (dir === "desc" ? -1 : 1);
    return order !== 0 ? order : x.store_id - y.store_id;
  });
};

// --- Cells.

const FlagCell = (props: { value: boolean | null }) =>
  props.value === null
    ? html`<td title=${t("notEvaluated")}><span class="dash">${t("none")}</span></td>`
    : html`<td><span class=${props.value ? "flag pass" : "flag fail"}>${
      t(props.value ? "met" : "notMet")
    }</span></td>`;

const qualityTitle = (q: QualitySummary) =>
  [
    t("pfQualityTitle", {
      flagged: formatCount(q.flagged_days),
      checked: formatCount(q.checked_days),
    }),
    ...Object.entries(q.flagged_by_kind)
      .filter(([, n]) => n > 0)
      .map(([kind, n]) => `${labelOf(t(kind as Key))}${formatCount(n)}`),
  ].join("\n");

// The figures a store row and a roll-up row share, after their name cells.
const Figures = (
  props: { summary: MetricSummary; provisional: number; quality: QualitySummary },
) => {
  const s = props.summary;
  return html`
    <${NumCell} value=${s.actual_kwh} digits=${DIGITS.total} unit="kWh" testid="actual" />
    <${NumCell} value=${s.matched_eba_kwh} digits=${DIGITS.total} unit="kWh" />
    ${aboveBaseline(s)
      ? ["aes", "aer"].map((testid) =>
        html`<td class="num" data-testid=${testid} title=${t("NEGATIVE_SAVINGS")}>${
          t(
            "overBaseline",
          )
        }</td>`
      )
      : html`
        <${NumCell} value=${s.aes_kwh} digits=${DIGITS.total} unit="kWh" testid="aes" />
        <${NumCell}
          value=${s.aer_percent} digits=${DIGITS.percent} unit="%" testid="aer" />
      `}
    ${FLAGS.map((f) => html`<${FlagCell} value=${s[f]} />`)}
    <td
      class="num"
      data-testid="matched"
      title=${t("pfMatchedTitle", { matched: s.matched_days, requested: s.requested_days })}
    >${formatCount(s.matched_days)} / ${formatCount(s.requested_days)}</td>
    <td class="num">${formatCount(props.provisional)}</td>
    <td class="num" data-testid="quality" title=${qualityTitle(props.quality)}>${formatCount(
      props.quality.flagged_days,
    )}</td>
  `;
};

const figureHeads = () => [
  t("colActual"),
  t("colEba"),
  t("colAes"),
  t("colAer"),
  ...FLAGS.map((f) => t(FLAG_LABEL[f])),
  t("colMatched"),
  t("colProvisional"),
  t("colQuality"),
];

// --- The controls: range, brand, city.

// Brands and cities seen in the answers of this page load, for the member and stores signed in: a
// filtered answer names only the brands and cities it covers, so the choices are what has been
// seen, the current ones included. Whoever signs in next starts from none (what an earlier key saw
// is not shown to another).
const knownBrands = new Map<number, string>();
const knownCities = new Set<string>();
let knownBy = "";
const knownFor = (session: Session) => {
  const by = `${session.info.member}|${session.info.store_ids?.join(",") ?? "*"}`;
  if (by === knownBy) return;
  knownBrands.clear();
  knownCities.clear();
  knownBy = by;
};
const remember = (session: Session, answer: PortfolioResponse) => {
  knownFor(session);
  for (const b of answer.brands) knownBrands.set(b.brand_id, b.brand_name);
  for (const c of answer.cities) if (c.city !== null) knownCities.add(c.city);
};

// The control that changed the view: the form is drawn anew for each view (keyed by it, so that
// Back and Forward reset its fields), and the same control of the new form takes the focus back.
let refocus: string | null = null;

const CHOICE_SETTLES_MS = 400;

const Controls = (props: { session: Session; view: View }) => {
  const { view } = props;
  knownFor(props.session);
  const [error, setError] = useState<string | null>(null);
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (refocus !== null) {
      form.current?.querySelector<HTMLElement>(`[data-control="${refocus}"]`)?.focus();
    }
    refocus = null;
  }, []);
  const { start: first, end: last } = props.session.dataset;
  const go = (change: Partial<View>, control: string | null = null) => {
    refocus = control;
    navigate(urlOf({ ...view, ...change }));
  };
  // A list's choice is read once the person has settled on it: arrow keys on a closed list change
  // it once a key (a read of the whole portfolio and a page in the history each), a pause ends it.
  const settling = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(settling.current), []);
  const chosen = (change: Partial<View>, control: string) => {
    clearTimeout(settling.current);
    settling.current = setTimeout(() => go(change, control), CHOICE_SETTLES_MS);
  };
  const submit = (event: Event) => {
    const range = rangeOfForm(event, PORTFOLIO_MAX_DAYS);
    if ("error" in range) return setError(range.error);
    setError(null);
    go({ start: range.start, end: range.end });
  };
  const year = Number(last.slice(0, 4)) - (last.slice(5) < "09-30" ? 1 : 0);
  const brands = [...knownBrands].sort((a, b) => a[1].localeCompare(b[1], language()));
  if (view.brand !== null && !knownBrands.has(view.brand)) {
    brands.push([view.brand, `#${view.brand}`]);
  }
  const cities = [...new Set([...knownCities, ...(view.city === null ? [] : [view.city])])]
    .sort((a, b) => a.localeCompare(b, language()));
  return html`<form class="range" onSubmit=${submit} data-testid="portfolio-controls" ref=${form}>
    <label><span>${t("start")}</span>
      <input name="start" type="date" value=${view.start} min=${first} max=${last} required />
    </label>
    <label><span>${t("end")}</span>
      <input name="end" type="date" value=${view.end} min=${first} max=${last} required />
    </label>
    <button type="submit">${t("apply")}</button>
    <span class="presets" role="group" aria-label=${t("presets")}>
      <button type="button" data-control="last365" onClick=${() =>
    go(defaultRange(props.session), "last365")}>${t("last365")}</button>
      <button type="button" data-control="summer" onClick=${() =>
    go({ start: `${year}-06-01`, end: `${year}-09-30` }, "summer")}>${
    t("summer", { year })
  }</button>
    </span>
    <label><span>${t("brand")}</span>
      <select
        name="brand_id"
        data-control="brand"
        value=${view.brand === null ? "" : String(view.brand)}
        onChange=${(event: Event) => {
    const value = (event.target as HTMLSelectElement).value;
    chosen({ brand: value === "" ? null : Number(value) }, "brand");
  }}
      >
        <option value="">${t("allBrands")}</option>
        ${brands.map(([id, name]) => html`<option value=${String(id)}>${name}</option>`)}
      </select>
    </label>
    <label><span>${t("city")}</span>
      <select
        name="city"
        data-control="city"
        value=${view.city ?? ""}
        onChange=${(event: Event) => {
    const value = (event.target as HTMLSelectElement).value;
    chosen({ city: value === "" ? null : value }, "city");
  }}
      >
        <option value="">${t("allCities")}</option>
        ${cities.map((c) => html`<option value=${c}>${c}</option>`)}
      </select>
    </label>
    ${error && html`<p class="alert" role="alert">${error}</p>`}
  </form>`;
};

// --- The stores table.

const QuickFilters = (
  props: { view: View; all: number; failing: number; incomplete: number },
) => {
  const item = (show: Show | null, label: string, hint: string | null, testid: string) =>
    html`
      <${Link}
        href=${urlOf({ ...props.view, show })}
        class=${props.view.show === show ? "chip on" : "chip"}
        current=${props.view.show === show}
        title=${hint ?? undefined}
        testid=${testid}
      >${label}<//>
    `;
  return html`<p class="chips" role="group" aria-label=${t("pfQuick")}>
    ${item(null, t("pfAll", { n: formatCount(props.all) }), null, "quick-all")}
    ${
    item(
      "failing",
      t("pfFailing", { n: formatCount(props.failing) }),
      t("pfFailingHint"),
      "quick-failing",
    )
  }
    ${
    item(
      "incomplete",
      t("pfIncomplete", { n: formatCount(props.incomplete) }),
      t("pfIncompleteHint"),
      "quick-incomplete",
    )
  }
  </p>`;
};

// A column heading that sorts: the first click ascending (for AER, AES and the flags the worst
// first), the next descending.
const SortHead = (props: { view: View; column: SortKey; label: string }) => {
  const { view, column } = props;
  const active = view.sort === column;
  const dir: Dir = active && view.dir === "asc" ? "desc" : "asc";
  return html`
    <th
      scope="col"
      aria-sort=${active ? (view.dir === "asc" ? "ascending" : "descending") : undefined}
      data-sort=${column}
    >
      <${Link}
        href=${urlOf({ ...view, sort: column, dir })}
        class="sort"
        title=${t("pfSortBy", { column: props.label })}
      >${props.label}<span class="arrow" aria-hidden="true">${active
        ? (view.dir === "asc" ? " ▲" : " ▼")
        : ""}</span><//>
      </th>
  `;
};

const StoresTable = (props: { view: View; stores: ReadonlyArray<PortfolioStore> }) => {
  const { view } = props;
  const heads = figureHeads();
  const columns: Array<[SortKey, string]> = [
    ["name", t("store")],
    ["brand", t("brand")],
    ["city", t("city")],
    ...(["actual", "eba", "aes", "aer", ...FLAGS, "matched", "provisional", "quality"] as const)
      .map((key, i) => [key, heads[i]] as [SortKey, string]),
  ];
  const caption = t("pfStores", { start: view.start, end: view.end });
  return html`
    <div class="table-wrap" tabindex="0" role="region" aria-label=${caption}>
      <table class="portfolio" data-testid="portfolio-table">
        <caption>${caption}</caption>
        <thead>
          <tr>${columns.map(([key, label]) =>
            html`<${SortHead} view=${view} column=${key} label=${label} />`
          )}</tr>
        </thead>
        <tbody>
          ${props.stores.map((s) =>
            html`
              <tr data-testid="portfolio-row" data-store=${s.store_id}>
                <th scope="row">
                  <${Link}
                    href=${`/console/stores/${s.store_id}?start=${view.start}&end=${view.end}`}
                    title=${s.store_code}
                  >${s.name}<//>
                            </th>
                            <td>${s.brand_name}</td>
                            <td>${s.city ?? t("none")}</td>
                            <${Figures}
                              summary=${s.summary}
                              provisional=${s.provisional_days}
                              quality=${s.data_quality}
                            />
                          </tr>
            `
          )}
        </tbody>
      </table>
    </div>
  `;
};

// --- The roll-ups: total, per brand, per city, in one compact table.

const Rollups = (props: { view: View; answer: PortfolioResponse }) => {
  const { view, answer } = props;
  const group = (label: string) =>
    html`
      <tr class="group">
        <th scope="rowgroup" colspan="14">${label}</th>
      </tr>
    `;
  const row = (
    name: unknown,
    r: PortfolioResponse["total"],
    testid: string,
  ) =>
    html`
      <tr data-testid=${testid}>
        <th scope="row">${name}</th>
        <td class="num">${formatCount(r.store_count)}</td>
        <${Figures} summary=${r.summary} provisional=${r.provisional_days} quality=${r
          .data_quality} />
      </tr>
    `;
  const only = (label: string, change: Partial<View>) =>
    html`<${Link} href=${urlOf({ ...view, show: null, ...change })} title=${
      t("pfOnly", { name: label })
    }>${label}<//>`;
  return html`
    <section aria-labelledby="rollups-title" data-testid="rollups">
      <h2 id="rollups-title">${t("pfRollups")}</h2>
      <p class="muted">${t("pfRollupsHint")}</p>
      <div class="table-wrap" tabindex="0" role="region" aria-label=${t("pfRollups")}>
        <table class="portfolio rollups">
          <caption>${t("pfRollupsCaption", { start: answer.start, end: answer.end })}</caption>
          <thead>
            <tr>${[t("pfGroup"), t("colStores"), ...figureHeads()].map((h) =>
              html`<th scope="col">${h}</th>`
            )}</tr>
          </thead>
          <tbody>${row(t("pfTotal"), answer.total, "rollup-total")}</tbody>
          <tbody>
              ${group(t("pfByBrand"))}
              ${answer.brands.map((b) =>
                row(
                  view.brand === b.brand_id
                    ? b.brand_name
                    : only(b.brand_name, { brand: b.brand_id }),
                  b,
                  "rollup-brand",
                )
              )}
            </tbody>
          <tbody>
              ${group(t("pfByCity"))}
              ${answer.cities.map((c) =>
                row(
                  c.city === null
                    ? t("pfNoCity")
                    : view.city === c.city
                    ? c.city
                    : only(c.city, { city: c.city }),
                  c,
                  "rollup-city",
                )
              )}
            </tbody>
        </table>
      </div>
    </section>
  `;
};

const Portfolio = (props: { view: View; answer: PortfolioResponse }) => {
  const { view, answer } = props;
  const all = answer.stores;
  const failingCount = all.filter(failing).length;
  const incompleteCount = all.filter(incomplete).length;
  const kept = view.show === "failing"
    ? all.filter(failing)
    : view.show === "incomplete"
    ? all.filter(incomplete)
    : all;
  const shown = sorted(kept, view.sort, view.dir);
  const empty = all.length === 0
    ? t("pfNoStores")
    : shown.length === 0
    ? t(view.show === "failing" ? "pfNoFailing" : "pfNoIncomplete")
    : null;
  return html`
    <${QuickFilters}
      view=${view}
      all=${all.length}
      failing=${failingCount}
      incomplete=${incompleteCount}
    />
    <p class="muted" role="status" data-testid="portfolio-shown">${t("pfShown", {
      n: formatCount(shown.length),
      total: formatCount(all.length),
    })}</p>
    ${empty === null
      ? html`<${StoresTable} view=${view} stores=${shown} />`
      : html`<p class="notice" data-testid="portfolio-empty">${empty}</p>`}
    <${Rollups} view=${view} answer=${answer} />
  `;
};

// The answer's parameters: the range and the filters the service applies (the quick filter and the
// sort are the page's own).
const apiQuery = (view: View) => {
  const query = new URLSearchParams({ start: view.start, end: view.end });
  if (view.brand !== null) query.set("brand_id", String(view.brand));
  if (view.city !== null) query.set("city", view.city);
  return query;
};

// The same read as a file.
const Downloads = (props: { view: View }) => {
  const base = `/api/v1/portfolio?${apiQuery(props.view)}`;
  return html`
    <p class="export" data-testid="portfolio-downloads">
      <${Download} href=${`${base}&format=csv`} testid="portfolio-csv">${t("pfDownloadCsv")}<//>
      <${Download} href=${`${base}&format=xlsx`} testid="portfolio-xlsx">${t(
        "pfDownloadXlsx",
      )}<//>
      <span class="muted">${t("pfDownloadHint")}</span>
    </p>
  `;
};

export const PortfolioPage = (props: { session: Session; query: URLSearchParams }) => {
  useTitle(t("pfTitle"));
  const view = viewOf(props.session, props.query);
  const problem = rangeProblem(view);
  const { load, reload } = useLoad(
    (signal) => {
      // A range typed into the address is checked here as the form checks it, unsent.
      if (problem !== null) return Promise.reject(new ApiError(400, "INVALID_RANGE", problem));
      return get<PortfolioResponse>(`/api/v1/portfolio?${apiQuery(view)}`, signal);
    },
    [view.start, view.end, view.brand, view.city],
  );
  // Before the controls are drawn, so that they offer what this answer names.
  if (load.state === "ready") remember(props.session, load.value);
  return html`
    <h1 tabindex="-1" data-testid="portfolio-title">${t("pfTitle")}</h1>
    <p class="muted">${t("pfIntro")}</p>
    <${Controls} key=${urlOf(view)} session=${props.session} view=${view} />
    ${problem === null ? html`<${Downloads} view=${view} />` : null}
    <${Loaded} load=${load} retry=${problem === null ? reload : undefined}>${(
      answer: PortfolioResponse,
    ) => html`<${Portfolio} view=${view} answer=${answer} />`}<//>
  `;
};
