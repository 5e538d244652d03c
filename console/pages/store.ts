/// <reference lib="dom" />
// A store: its energy over a range (chart and days), its savings (panel and monthly totals), metrics,
// periods and reference data, with the profile edit for those who may.
import { useState } from "preact/hooks";
import {
  type Answer,
  ApiError,
  call,
  type EnergyResponse,
  get,
  getAnswer,
  type Hours,
  type MetricsResponse,
  type MetricSummary,
  type PeriodOverview,
  type ProfileResult,
  type ProfileUpdate,
  type StoreReference,
  type StoresResponse,
} from "../api.ts";
import { EnergyChart } from "../chart.ts";
import { AuditSection, ExportLinks, QualitySection } from "./store_extra.ts";
import { MonthsSection, SavingsSection } from "./store_savings.ts";
import { storeViewQuery } from "./day.ts";
import { aboveBaseline, DIGITS, instantOfWall, wallInputOf, weekdays } from "../format.ts";
import { language, metricWords, noteWords, sourceWords, t, unitWords, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import {
  addDays,
  Code,
  Flag,
  formatCount,
  historyNotKept,
  html,
  instant,
  isDate,
  labelOf,
  Link,
  listed,
  type Load,
  Loaded,
  navigate,
  Num,
  NumCell,
  rangeOfForm,
  show,
  Table,
  timeZone,
  useLoad,
  useTitle,
  When,
  withUnit,
  withZone,
} from "../ui.ts";

const ENERGY_MAX_DAYS = 366;

// The range asked for, else the last 366 days of the dataset (contract: the dataset's range is
// the reference client's default).
const rangeOf = (session: Session, query: URLSearchParams) => {
  const { start: first, end: last } = session.dataset;
  const end = isDate(query.get("end")) ? query.get("end")! : last;
  const fallback = addDays(end, -(ENERGY_MAX_DAYS - 1));
  const start = isDate(query.get("start"))
    ? query.get("start")!
    : fallback < first
    ? first
    : fallback;
  return { start, end };
};

// The data the page shows: now, or as known at an instant / as an earlier answer saw it (the
// service's known_at and data_token; a link with data_token shows exactly the same numbers later).
type AsOf = { readonly param: "known_at" | "data_token"; readonly value: string } | null;

const asOfOf = (query: URLSearchParams): AsOf => {
  const token = query.get("data_token");
  if (token !== null && /^[A-Za-z0-9_-]{40,160}$/.test(token)) {
    return { param: "data_token", value: token };
  }
  const at = query.get("known_at");
  if (at !== null && !Number.isNaN(Date.parse(at))) return { param: "known_at", value: at };
  return null;
};

const asOfQuery = (asOf: AsOf) =>
  asOf === null ? "" : `&${asOf.param}=${encodeURIComponent(asOf.value)}`;

const pageUrl = (storeId: number, start: string, end: string, asOf: AsOf) =>
  `/console/stores/${storeId}?start=${start}&end=${end}${asOfQuery(asOf)}`;

const AsOfForm = (
  props: { storeId: number; start: string; end: string; asOf: AsOf; token: string | null },
) => {
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const value =
      ((event.target as HTMLFormElement).elements.namedItem("known_at") as HTMLInputElement).value;
    // The picker's value is a wall time without a zone ("2026-11-18T14:03:05"): it is read in the
    // dataset's zone, as its label says, whatever the browser's zone (format.ts, instantOfWall:
    // read as UTC, then moved back by the zone's offset at that time; a time a clock change skips
    // or repeats is settled as Temporal's "compatible" does). The instant goes out in UTC.
    const ms = instantOfWall(value, timeZone());
    if (ms === null) return setError(t("asOfInvalid"));
    const at = new Date(ms);
    if (ms > Date.now()) return setError(t("asOfFuture"));
    setError(null);
    navigate(
      pageUrl(props.storeId, props.start, props.end, {
        param: "known_at",
        value: at.toISOString(),
      }),
    );
  };
  const shown = props.asOf?.param === "known_at" ? wallInputOf(props.asOf.value, timeZone()) : "";
  return html`<form class="range as-of" onSubmit=${submit} data-testid="as-of-form">
    <label><span>${withZone(t("asOfLabel"))}</span>
      <input name="known_at" type="datetime-local" step="1" value=${shown} />
    </label>
    <button type="submit">${t("asOfShow")}</button>
    ${
    props.asOf !== null &&
    html`<button type="button" onClick=${() =>
      navigate(pageUrl(props.storeId, props.start, props.end, null))}>${t("asOfNow")}</button>`
  }
    ${
    props.token !== null &&
    html`<${Link} href=${
      pageUrl(props.storeId, props.start, props.end, { param: "data_token", value: props.token })
    }>${t("permalink")}<//>`
  }
    ${error && html`<p class="alert" role="alert">${error}</p>`}
  </form>`;
};

const AsOfBanner = (props: { asOf: AsOf; answer: Answer<unknown> }) =>
  props.asOf === null
    ? html`<p class="muted token-line" data-testid="data-token">${
      t("dataNow", {
        token: props.answer.token ?? "—",
      })
    }</p>`
    : html`<p class="notice token-line" role="status" data-testid="as-of-banner">${
      t("asOfBanner", {
        at: instant(props.answer.knownAt ?? props.asOf.value, true, true),
        token: props.answer.token ?? "—",
      })
    }</p>`;

const RangeForm = (
  props: { session: Session; storeId: number; start: string; end: string; asOf: AsOf },
) => {
  const [error, setError] = useState<string | null>(null);
  const { start: first, end: last } = props.session.dataset;
  const go = (start: string, end: string) =>
    navigate(pageUrl(props.storeId, start, end, props.asOf));
  const submit = (event: Event) => {
    const range = rangeOfForm(event, ENERGY_MAX_DAYS);
    if ("error" in range) return setError(range.error);
    setError(null);
    go(range.start, range.end);
  };
  const year = Number(last.slice(0, 4)) - (last.slice(5) < "09-30" ? 1 : 0);
  return html`<form class="range" onSubmit=${submit}>
    <label><span>${t("start")}</span>
      <input name="start" type="date" value=${props.start} min=${first} max=${last} required />
    </label>
    <label><span>${t("end")}</span>
      <input name="end" type="date" value=${props.end} min=${first} max=${last} required />
    </label>
    <button type="submit">${t("apply")}</button>
    <span class="presets" role="group" aria-label=${t("presets")}>
      <button type="button" onClick=${() => go(addDays(last, -29), last)}>${t("last30")}</button>
      <button type="button" onClick=${() =>
    go(addDays(last, -365) < first ? first : addDays(last, -365), last)}>${t("last366")}</button>
      <button type="button" onClick=${() => go(`${year}-06-01`, `${year}-09-30`)}>${
    t("summer", { year })
  }</button>
    </span>
    ${error && html`<p class="alert" role="alert">${error}</p>`}
  </form>`;
};

const EnergySection = (props: {
  session: Session;
  storeId: number;
  scopeId: number;
  start: string;
  end: string;
  asOf: AsOf;
}) => {
  const q = `scope_id=${props.scopeId}&start=${props.start}&end=${props.end}${
    asOfQuery(props.asOf)
  }`;
  const energy = useLoad(
    (signal) => getAnswer<EnergyResponse>(`/api/v1/stores/${props.storeId}/energy?${q}`, signal),
    [props.storeId, q],
  );
  const metrics = useLoad(
    (signal) => get<MetricsResponse>(`/api/v1/stores/${props.storeId}/metrics?${q}`, signal),
    [props.storeId, q],
  );
  const raw = props.session.may("raw");
  return html`
    <section aria-labelledby="energy-title">
      <h2 id="energy-title">${t("energyTitle")} · ${props.start} – ${props.end}</h2>
      <${AsOfForm}
        storeId=${props.storeId}
        start=${props.start}
        end=${props.end}
        asOf=${props.asOf}
        token=${energy.load.state === "ready" ? energy.load.value.token : null}
      />
      <${Loaded} load=${energy.load} retry=${energy.reload}>${(answer: Answer<EnergyResponse>) => {
        const e = answer.body;
        // Days whose value is provisional (intraday, not settled): the metrics' days say which.
        const provisional = new Set(
          metrics.load.state === "ready"
            ? metrics.load.value.days.filter((m) => m.provisional === 1).map((m) => m.business_date)
            : [],
        );
        return html`
          <${AsOfBanner} asOf=${props.asOf} answer=${answer} />
          <${EnergyChart}
            days=${e.days}
            metrics=${metrics.load.state === "ready" ? metrics.load.value.days : null}
          />
          <dl class="summary" data-testid="energy-summary">
            <div>
              <dt>${t("requested")}</dt>
              <dd>${formatCount(e.summary.requested_days)}</dd>
            </div>
            <div>
              <dt>${t("availableDays")}</dt>
              <dd>${formatCount(e.summary.available_days)}</dd>
            </div>
            <div>
              <dt>${t("missingDays")}</dt>
              <dd>${formatCount(e.summary.missing_days)}</dd>
            </div>
            <div>
              <dt>${t("voidDays")}</dt>
              <dd>${formatCount(e.summary.void_days)}</dd>
            </div>
            <div>
              <dt>${t("total")}</dt>
              <dd>
                <${Num} value=${e.summary.available_energy_kwh} digits=${DIGITS.total}
                  unit="kWh" testid="total-kwh" />
              </dd>
            </div>
            <div>
              <dt>${t("complete")}</dt>
              <dd>${e.summary.complete ? t("yes") : t("no")}</dd>
            </div>
          </dl>
          <details class="days">
            <summary>${withUnit(t("daysTable"), String(e.days.length))}</summary>
            <${Table}
              caption=${t("daysTable")}
              head=${[
                t("date"),
                t("kwh"),
                t("status"),
                t("source"),
                t("quality"),
                t("note"),
                t("revision"),
              ]}
            >
                    ${e.days.map((d) =>
                      html`
                        <tr data-testid="day-row" data-date=${d
                          .business_date} data-provisional=${provisional
                            .has(d.business_date)
                          ? "1"
                          : undefined}>
                          <th scope="row">${raw && d.energy_id !== null
                            ? html`<${Link} href=${`/console/stores/${props.storeId}/days/${d.business_date}${
                              storeViewQuery(new URLSearchParams(location.search))
                            }`}>${d.business_date}<//>`
                            : d.business_date}</th>
                          <${NumCell} value=${d.energy_kwh} digits=${DIGITS.kwh} unit="kWh"
                            testid="kwh" />
                          <td>
                            <${Code} code=${d.status} />${provisional.has(d.business_date)
                              ? html`
                                <span class="badge" data-testid="provisional">${t(
                                  "provisionalDay",
                                )}</span>
                              `
                              : null}
                          </td>
                          <td title=${d.source_label}>${sourceWords(d.status, d.source_kind)}</td>
                          <td>
                            <${Code} code=${d.quality_status} />
                          </td>
                          <td>${show(d.quality_note)}</td>
                          <td class="num">${show(d.revision_no)}</td>
                        </tr>
                      `
                    )}
                  <//>
                </details>
        `;
      }}<//>
        <${SavingsSection} load=${metrics.load} retry=${metrics.reload} />
        <${MonthsSection}
          storeId=${props.storeId}
          scopeId=${props.scopeId}
          start=${props.start}
          end=${props.end}
          asOfQuery=${asOfQuery(props.asOf)}
        />
        <${MetricsSection} load=${metrics.load} retry=${metrics.reload} />
      </section>
  `;
};

const Cards = (props: { summary: MetricSummary }) => {
  const s = props.summary;
  // Savings above the baseline are said in words, not as a missing value.
  const over = aboveBaseline(s);
  const card = (label: string, field: string, value: string | null, unit = "kWh") =>
    html`
      <div class="card" data-field=${field}><span class="label">${label}</span>${over &&
          (field === "aes_kwh" || field === "aer_percent")
        ? html`<span class="value" data-testid="card-value" title=${t("NEGATIVE_SAVINGS")}>${
          t(
            "overBaseline",
          )
        }</span>`
        : html`
          <span
            class="value"><${Num} value=${value} digits=${unit === "%"
              ? DIGITS.percent
              : DIGITS.total} unit=${unit} testid="card-value" /></span>${value !== null
              ? html`<span class="unit">${unit}</span>`
              : ""}
        `}</div>
    `;
  return html`
    <div class="cards" data-testid="metric-cards">
        ${card(t("actual"), "actual_kwh", s.actual_kwh)}
        ${card(t("matchedEba"), "matched_eba_kwh", s.matched_eba_kwh)}
        ${card(t("aes"), "aes_kwh", s.aes_kwh)}
        ${card(t("aer"), "aer_percent", s.aer_percent, "%")}
        ${card(t("tes180"), "tes_180_kwh", s.tes_180_kwh)}
        ${card(t("tes210"), "tes_210_kwh", s.tes_210_kwh)}
      </div>
    <p class="muted">${t("matchedDays", {
      matched: formatCount(s.matched_days),
      requested: formatCount(s.requested_days),
    })}</p>
  `;
};

const MetricsSection = (props: {
  load: ReturnType<typeof useLoad<MetricsResponse>>["load"];
  retry: () => void;
}) =>
  html`
    <section aria-labelledby="metrics-title">
      <h2 id="metrics-title">${t("metricsTitle")}</h2>
      <${Loaded} load=${props.load} retry=${props.retry} saidAbove=${historyNotKept}>${(
        m: MetricsResponse,
      ) =>
        html`
          <${Cards} summary=${m.summary} />
          <${Table} caption=${t("availability")} head=${[
            t("details"),
            t("status"),
            withUnit(t("available"), t("daysUnit")),
            t("reason"),
          ]}>
                  ${m.availability.map((a) =>
                    html`
                      <tr>
                        <th scope="row" title=${a.metric}>${metricWords(a.metric, a.label)}</th>
                        <td>
                          <${Code} code=${a.status} />
                        </td>
                        <td class="num">${formatCount(a.available_days)} / ${formatCount(
                          a.requested_days,
                        )}</td>
                        <td>${a.reasons.length === 0
                          ? t("none")
                          : listed(a.reasons.map(words), true)}</td>
                      </tr>
                    `
                  )}
                <//>
                ${m.notes.length > 0 &&
                  html`
                    <h3>${t("notes")}</h3>
                    <ul class="notes" data-testid="metric-notes">${m.notes.map((n) =>
                      html`<li>${noteWords(n)}</li>`
                    )}</ul>
                  `}
        `}<//>
      </section>
  `;

const PeriodsSection = (
  props: { storeId: number; scopeId: number; asOf: string; known: AsOf },
) => {
  const periods = useLoad(
    (signal) =>
      get<PeriodOverview>(
        `/api/v1/stores/${props.storeId}/periods?scope_id=${props.scopeId}&as_of=${props.asOf}${
          asOfQuery(props.known)
        }`,
        signal,
      ),
    [props.storeId, props.asOf, asOfQuery(props.known)],
  );
  return html`
    <section aria-labelledby="periods-title">
      <h2 id="periods-title">${t("periodsTitle", { date: props.asOf })}</h2>
      <${Loaded} load=${periods.load} retry=${periods.reload} saidAbove=${historyNotKept}>${(
        p: PeriodOverview,
      ) =>
        html`
          <${Table}
            caption=${t("periodsTitle", { date: props.asOf })}
            head=${[
              t("period"),
              t("range"),
              t("colActual"),
              t("colEba"),
              t("colAes"),
              t("colAer"),
              t("ebaPass"),
            ]}
          >
                  ${p.periods.map((r) =>
                    html`
                      <tr data-testid="period-row">
                        <th scope="row">${t(r.key)}</th>
                        <td>${r.start} – ${r.end}</td>
                        <${NumCell} value=${r.summary.actual_kwh} digits=${DIGITS.total} unit="kWh"
                          testid="period-actual" />
                        <${NumCell} value=${r.summary.matched_eba_kwh} digits=${DIGITS
                          .total} unit="kWh" />
                        <${NumCell} value=${r.summary.aes_kwh} digits=${DIGITS.total} unit="kWh" />
                        <${NumCell} value=${r.summary.aer_percent} digits=${DIGITS
                          .percent} unit="%" />
                        <td>
                          <${Flag} value=${r.summary.eba_pass} />
                        </td>
                      </tr>
                    `
                  )}
                <//>
        `}<//>
      </section>
  `;
};

const hours = (list: ReadonlyArray<Hours> | null) =>
  list === null
    ? t("none")
    : list.map((h) => `${h.start}–${h.end}${h.next_day ? " (+1)" : ""}`).join(", ");

const ProfileEdit = (
  props: {
    storeId: number;
    reference: StoreReference;
    onSaving: () => void;
    onSaved: (confirmation: string) => void;
  },
) => {
  // The profile the edit started from (after a conflict, the one read then).
  const [base, setBase] = useState(props.reference.profile);
  const [name, setName] = useState(base.name);
  const [address, setAddress] = useState(base.address ?? "");
  const version = base.version;
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<
    { kind: "ok" | "alert"; text: string; changes?: string[] } | null
  >(null);
  const save = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setMessage(null);
    props.onSaving();
    try {
      const body: ProfileUpdate = { name, address, expected_version: version };
      const result = await call<ProfileResult>(
        "PATCH",
        `/api/v1/stores/${props.storeId}/profile`,
        { body },
      );
      // The section reads the profile again and draws this form anew on the new version: the
      // confirmation is kept and shown by the section, which stays.
      props.onSaved(
        result.status === "UPDATED" ? t("saved", { v: result.profile.version }) : t("unchanged"),
      );
    } catch (error) {
      if (error instanceof ApiError && error.code === "STALE_VERSION") {
        // Read the profile again and show what the other change did. A field this edit changed
        // keeps what was typed; one it left alone takes the other change's value.
        const now = (await get<StoreReference>(`/api/v1/stores/${props.storeId}/reference`))
          .profile;
        const changes: string[] = [];
        if (now.name !== base.name) {
          changes.push(t("theyChanged", { field: t("name"), from: base.name, to: now.name }));
          if (name === base.name) setName(now.name);
        }
        const [was, is] = [base.address ?? "", now.address ?? ""];
        if (is !== was) {
          changes.push(t("theyChanged", { field: t("address"), from: was, to: is }));
          if (address === was) setAddress(is);
        }
        setBase(now);
        setMessage({ kind: "alert", text: t("staleVersion", { v: now.version }), changes });
      } else if (error instanceof ApiError && error.code === "NAME_TAKEN") {
        setMessage({ kind: "alert", text: t("nameTaken") });
      } else {
        setMessage({ kind: "alert", text: (error as Error).message });
      }
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="profile-edit" onSubmit=${save} data-testid="profile-form">
    <h4>${t("editProfile")}</h4>
    <label><span>${t("name")}</span>
      <input name="name" required maxlength="80" value=${name} onInput=${(e: Event) =>
    setName((e.target as HTMLInputElement).value)} />
    </label>
    <label><span>${t("address")}</span>
      <input name="address" required maxlength="200" value=${address} onInput=${(e: Event) =>
    setAddress((e.target as HTMLInputElement).value)} />
    </label>
    <p class="muted">${t("version")} ${version}</p>
    <button type="submit" disabled=${busy}>${busy ? t("saving") : t("save")}</button>
    ${
    message &&
    html`<div class=${message.kind === "ok" ? "notice" : "alert"} role=${
      message.kind === "ok" ? "status" : "alert"
    } data-testid="profile-message">
      <p>${message.text}</p>
      ${
      message.changes && message.changes.length > 0 && html`<ul>${
        message.changes.map((c) => html`<li>${c}</li>`)
      }</ul>`
    }
    </div>`
  }
  </form>`;
};

// A device by its name, else its code; its number only when the reference does not list it.
const deviceName = (r: StoreReference, id: number) => {
  const d = r.devices.find((d) => d.id === id);
  return d === undefined ? String(id) : d.device_name ?? d.device_code;
};

const ReferenceSection = (
  props: { session: Session; storeId: number; load: ReturnType<typeof useLoad<StoreReference>> },
) => {
  // The confirmation of the last save, in a live region that stays while the profile is read
  // again, so it is seen and announced.
  const [saved, setSaved] = useState<string | null>(null);
  return html`
    <section aria-labelledby="reference-title">
      <h2 id="reference-title">${t("referenceTitle")}</h2>
      <div role="status">${saved &&
        html`<p class="notice" data-testid="profile-saved">${saved}</p>`}</div>
      <${Loaded} load=${props.load.load} retry=${props.load.reload}>${(r: StoreReference) => {
        const p = r.profile;
        return html`<div class="reference">
      <dl class="profile" data-testid="profile">
        <div><dt>${t("name")}</dt><dd data-testid="profile-name">${p.name}</dd></div>
        <div><dt>${t("brand")}</dt><dd>${p.brand_name}</dd></div>
        <div><dt>${t("city")}</dt><dd>${show(p.city)}</dd></div>
        <div><dt>${t("address")}</dt><dd data-testid="profile-address">${show(p.address)}</dd></div>
        <div><dt>${t("hours")}</dt><dd>${hours(p.business_hours)}</dd></div>
        <div><dt>${t("peak")}</dt><dd>${hours(p.peak_hours)}</dd></div>
        <div><dt>${t("mode")}</dt><dd>${show(p.business_mode)}</dd></div>
        <div><dt>${t("settlement")}</dt><dd>${show(p.settlement_mode)}</dd></div>
        <div><dt>${t("tags")}</dt><dd>${p.tags === null ? t("none") : p.tags.join(", ")}</dd></div>
        <div><dt>${t("keyStore")}</dt><dd><${Code} code=${p.key_store_status} /></dd></div>
        <div><dt>${t("version")}</dt><dd>${p.version}</dd></div>
      </dl>
      ${
          r.can_edit_profile && props.session.may("write") &&
          html`
            <${ProfileEdit} key=${p.version} storeId=${props
              .storeId} reference=${r} onSaving=${() => setSaved(null)}
              onSaved=${(confirmation: string) => {
                setSaved(confirmation);
                props.load.reload();
              }} />
          `
        }
      ${
          r.target_candidate &&
          html`
            <p
              class="muted">${labelOf(t("candidate"))}TES-180 <${Num} value=${r.target_candidate
                .tes_180_kwh} digits=${DIGITS.kwh} unit=${unitWords(
                  r.target_candidate
                    .unit,
                )} /> · TES-210 <${Num} value=${r.target_candidate.tes_210_kwh} digits=${DIGITS
                .kwh} unit=${unitWords(r.target_candidate.unit)} /> ${unitWords(
                  r.target_candidate
                    .unit,
                )} · <${Code} code=${r
                .target_candidate.status} /></p>
          `
        }
      <${Table} caption=${t("devices")} head=${[
          t("deviceName"),
          t("code"),
          t("deviceType"),
          t("material"),
          t("status"),
          withZone(t("observed")),
        ]}>
        ${
          r.devices.map((d) =>
            html`
              <tr>
                <th scope="row">${show(d.device_name)}</th>
                <td>${d.device_code}</td>
                <td>${d.device_type}</td>
                <td>${show(d.material_code)}</td>
                <td>
                  <${Code} code=${d.online_status} />
                </td>
                <td>
                  <${When} at=${d.status_observed_at} />
                </td>
              </tr>
            `
          )
        }
      <//>
      ${
          r.strategy &&
          html`<p>${
            t("strategyCounts", {
              configured: show(r.strategy.configured_count),
              dispatched: show(r.strategy.dispatched_count),
            })
          } · <${Code} code=${r.strategy.execution_status} /></p>`
        }
      ${
          r.strategy_items.length > 0 &&
          html`<${Table} caption=${t("strategy")} head=${[
            t("name"),
            t("dayType"),
            t("weekdays"),
            t("status"),
            t("dispatched"),
          ]}>
        ${
            r.strategy_items.map((i) =>
              html`
                <tr>
                  <th scope="row">${i.name}</th>
                  <td>
                    <${Code} code=${i.date_category} />
                  </td>
                  <td title=${i.day_week ?? undefined}>${i.day_week === null
                    ? t("none")
                    : weekdays(i.day_week, language())}</td>
                  <td>
                    <${Code} code=${i.publish_status} />
                  </td>
                  <td>${i.issue_status === null
                    ? show(null)
                    : i.issue_status === 1
                    ? t("yes")
                    : t("no")}</td>
                </tr>
              `
            )
          }
      <//>`
        }
      <${Table} caption=${t("stageHistory")} head=${[
          t("stage"),
          t("validFrom"),
          t("validTo"),
          t("reason"),
        ]}>
        ${
          r.stage_history.map((s) =>
            html`
              <tr>
                <th scope="row">
                  <${Code} code=${s.stage} />
                </th>
                <td>${s.valid_from}</td>
                <td>${show(s.valid_to)}</td>
                <td>${s.change_reason}</td>
              </tr>
            `
          )
        }
      <//>
      <${Table} caption=${
          withUnit(
            t("deviceEvents"),
            `${r.device_events.start} – ${r.device_events.end}`,
          )
        } head=${[
          withZone(t("occurred")),
          t("event"),
          t("deviceName"),
          t("note"),
        ]}>
        ${
          r.device_events.events.map((e) =>
            html`
              <tr>
                <th scope="row">
                  <${When} at=${e.occurred_at} />
                </th>
                <td>
                  <${Code} code=${e.event_type} />
                </td>
                <td>${deviceName(r, e.device_id)}</td>
                <td>${show(e.note)}</td>
              </tr>
            `
          )
        }
      <//>
    </div>`;
      }}<//>
      </section>
  `;
};

// A store outside the key's list: its reference answer tells a store that does not exist (404)
// from one this key may not see (403).
const StoreMissing = (props: { load: Load<StoreReference>; retry: () => void }) =>
  props.load.state === "failed" && props.load.error.status === 404
    ? html`<p class="alert" role="alert" data-testid="store-missing">${t("storeNotFound")}</p>`
    : props.load.state === "failed" && props.load.error.status !== 403
    ? html`<${Loaded} load=${props.load} retry=${props.retry}>${() => null}<//>`
    : props.load.state === "loading"
    ? html`<p class="muted" role="status">${t("loading")}</p>`
    : html`<p class="alert" role="alert" data-testid="store-missing">${t("forbidden")}</p>`;

export const StorePage = (props: { session: Session; storeId: number; query: URLSearchParams }) => {
  const { start, end } = rangeOf(props.session, props.query);
  const asOf = asOfOf(props.query);
  const reference = useLoad(
    (signal) => get<StoreReference>(`/api/v1/stores/${props.storeId}/reference`, signal),
    [props.storeId],
  );
  const stores = useLoad(
    (signal) => get<StoresResponse>("/api/v1/stores", signal),
    [],
  );
  const store = stores.load.state === "ready"
    ? stores.load.value.stores.find((s) => s.id === props.storeId)
    : undefined;
  // The profile's name first: it is read again after an edit, the list is not.
  const name = reference.load.state === "ready"
    ? reference.load.value.profile.name
    : store?.name ?? t("store");
  useTitle(name);
  return html`
    <p>
      <${Link} href="/console/stores">← ${t("backToStores")}<//></p>
        <h1 tabindex="-1" data-testid="store-title">${name}</h1>
        <${Loaded} load=${stores.load} retry=${stores.reload}>${() =>
          store === undefined
            ? html`<${StoreMissing} load=${reference.load} retry=${reference.reload} />`
            : html`
              <${RangeForm} session=${props.session} storeId=${props
                .storeId} start=${start} end=${end}
                asOf=${asOf} />
              <${EnergySection} session=${props.session} storeId=${props.storeId} scopeId=${store
                .scope_id} start=${start}
                end=${end} asOf=${asOf} />
              <${ExportLinks} start=${start} end=${end} storeIds=${[props.storeId]} asOf=${asOf !==
                null} />
              <${PeriodsSection} storeId=${props.storeId} scopeId=${store
                .scope_id} asOf=${end} known=${asOf} />
              <${QualitySection} storeId=${props.storeId} scopeId=${store
                .scope_id} start=${start} end=${end}
                asOf=${asOf !== null} />
              <${ReferenceSection} session=${props.session} storeId=${props
                .storeId} load=${reference} />
              <${AuditSection} session=${props.session} storeId=${props.storeId} />
            `}<//>
  `;
};
