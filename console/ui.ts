/// <reference lib="dom" />
// Shared pieces of the console: htm bound to Preact, routing by the History API, dates, and the
// small components every page uses (a value or a dash, a number or an instant for people, a loading
// or error state, a table).
import { h } from "preact";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import htmModule from "htm";
import { ApiError, fetchFile } from "./api.ts";
import {
  colonAfter,
  formatCount as countIn,
  formatDecimal as decimalIn,
  formatInstant,
  instantOf,
  isDecimal,
  listOf,
  withNote,
} from "./format.ts";
import { language, t, words } from "./i18n.ts";

// htm's types describe a CommonJS export; its default export is the function itself.
const htm = htmModule as unknown as {
  // A template is a node or a list of nodes, used wherever children are.
  // deno-lint-ignore no-explicit-any
  bind: (f: typeof h) => (strings: TemplateStringsArray, ...values: unknown[]) => any;
};
export const html = htm.bind(h);

// --- Routing: paths under /console, changed with pushState; links are real <a href>.

const listeners = new Set<() => void>();
// Moves through the browser's history (a link followed, Back, Forward), counted: a page whose own
// state follows the address (a list's filters) starts again from the address at each one, even when
// the address is the same as before the page changed it itself.
let visits = 0;
const visited = () => {
  visits++;
  listeners.forEach((l) => l());
};
export const navigate = (path: string) => {
  if (path !== location.pathname + location.search) history.pushState(null, "", path);
  // The page of the new path moves the focus to its heading (main.ts).
  visited();
};
addEventListener("popstate", visited);

export const useLocation = () => {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search), visit: visits };
};

// A link handled by the console (a modified click opens a new tab as usual); `current` marks the
// link of what is shown now (aria-current).
export const Link = (props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  title?: string;
  current?: boolean;
  testid?: string;
}) =>
  html`
    <a
      href=${props.href}
      class=${props.class}
      title=${props.title}
      aria-current=${props.current ? "true" : undefined}
      data-testid=${props.testid}
      onClick=${(event: MouseEvent) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        navigate(props.href);
      }}
    >${props.children}</a>
  `;

// --- Dates (YYYY-MM-DD, calendar days: no time zone arithmetic).

export const addDays = (date: string, days: number) => {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
};
export const daysBetween = (start: string, end: string) =>
  Math.round((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / 86_400_000) + 1;
export const isDate = (text: string | null): text is string =>
  text !== null && /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(text));

// The range a submitted form's start and end fields name, or the message that says why it is not
// one (out of order, not dates, or longer than `maxDays`).
export const rangeOfForm = (
  event: Event,
  maxDays: number,
): { readonly start: string; readonly end: string } | { readonly error: string } => {
  event.preventDefault();
  const form = event.target as HTMLFormElement;
  const start = (form.elements.namedItem("start") as HTMLInputElement).value;
  const end = (form.elements.namedItem("end") as HTMLInputElement).value;
  if (!isDate(start) || !isDate(end) || start > end) return { error: t("rangeOrder") };
  if (daysBetween(start, end) > maxDays) return { error: t("rangeTooLong") };
  return { start, end };
};

// --- Values: a dash for null; numbers and instants written for people by format.ts, in the page's
// language and the dataset's time zone, with the service's exact text on hover and for copy.

export const show = (value: string | number | null | undefined) =>
  value === null || value === undefined || value === "" ? t("none") : String(value);

// The dataset's time zone, in which every instant is shown (set once the dataset is read).
let zone = "UTC";
export const setTimeZone = (name: string) => {
  zone = name;
};
export const timeZone = () => zone;

export const formatDecimal = (value: string, digits: number) =>
  decimalIn(value, digits, language());
export const formatCount = (value: number) => countIn(value, language());
// A heading with its unit ("Before (kWh)"), or with the zone its times are in.
export const withUnit = (label: string, unit: string) => withNote(label, unit, language());
export const labelOf = (label: string) => colonAfter(label, language());
export const listed = (items: ReadonlyArray<string>, long = false) =>
  listOf(items, language(), long);
export const withZone = (label: string) => withNote(label, zone, language());
// An instant in the dataset's zone, as text: "2026-11-18 14:03", or with " (Asia/Shanghai)".
export const instant = (text: string, named = false, seconds = false) =>
  `${formatInstant(text, zone, seconds)}${named && instantOf(text) !== null ? ` (${zone})` : ""}`;

// The attributes of a rounded number: its exact decimal and unit on hover, the decimal for copy.
const exact = (value: string, unit: string) => ({ title: `${value} ${unit}`, "data-exact": value });

// A number in running text or a card; a text that is no decimal (a raw cell) is shown as it is.
export const Num = (
  props: { value: string | null; digits: number; unit: string; testid?: string },
) =>
  props.value === null
    ? html`<span class="dash" data-testid=${props.testid}>${t("none")}</span>`
    : !isDecimal(props.value)
    ? html`<span data-testid=${props.testid}>${props.value}</span>`
    : html`<span class="num" data-testid=${props.testid} ...${exact(props.value, props.unit)}>${
      formatDecimal(props.value, props.digits)
    }</span>`;

// A table cell with a rounded number; hovering it shows the service's exact decimal and its unit.
export const NumCell = (
  props: { value: string | null; digits: number; unit: string; testid?: string },
) =>
  props.value === null
    ? html`<td class="num" data-testid=${props.testid}><span class="dash">${t("none")}</span></td>`
    : !isDecimal(props.value)
    ? html`<td class="num" data-testid=${props.testid}>${props.value}</td>`
    : html`<td class="num" data-testid=${props.testid} ...${exact(props.value, props.unit)}>${
      formatDecimal(props.value, props.digits)
    }</td>`;

// An instant in the dataset's zone; the service's text on hover. `named` adds the zone, for a time
// shown outside a table whose heading names it.
export const When = (
  props: { at: string | null; named?: boolean; seconds?: boolean; testid?: string },
) =>
  props.at === null
    ? html`<span class="dash" data-testid=${props.testid}>${t("none")}</span>`
    : html`<time datetime=${
      instantOf(props.at) === null ? undefined : props.at
    } title=${props.at} data-testid=${props.testid}>${
      instant(props.at, props.named, props.seconds)
    }</time>`;

// The page's title in the browser's tab and history, in the page's language.
export const useTitle = (title: string | null) => {
  const app = t("appTitle");
  useEffect(() => {
    document.title = title === null ? app : `${title} · ${app}`;
  }, [title, app]);
};

export const Flag = (props: { value: boolean | null }) =>
  props.value === null
    ? html`<span class="dash">${t("none")}</span>`
    : html`<span class=${props.value ? "flag pass" : "flag fail"}>${
      props.value ? t("pass") : t("fail")
    }</span>`;

export const Code = (props: { code: string | null | undefined }) =>
  html`<span class="code" title=${props.code ?? ""}>${words(props.code)}</span>`;

// --- Loading states.

export type Load<T> =
  | { readonly state: "loading" }
  | { readonly state: "failed"; readonly error: ApiError }
  | { readonly state: "ready"; readonly value: T };

// Loads `fetcher()` when `deps` change; `reload` runs it again.
export const useLoad = <T>(fetcher: (signal: AbortSignal) => Promise<T>, deps: unknown[]) => {
  const [load, setLoad] = useState<Load<T>>({ state: "loading" });
  const [round, setRound] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setLoad({ state: "loading" });
    fetcher(controller.signal).then(
      (value) => !controller.signal.aborted && setLoad({ state: "ready", value }),
      (error) =>
        !controller.signal.aborted &&
        setLoad({
          state: "failed",
          error: error instanceof ApiError ? error : new ApiError(0, "UNKNOWN", String(error)),
        }),
    );
    return () => controller.abort();
  }, [...deps, round]);
  return { load, reload: () => setRound((n) => n + 1) };
};

// The service's instants (UTC, as it writes them) in a message, as the dataset's wall time with its
// zone named: the time a person then types into a picker of that zone.
const INSTANT_IN_TEXT =
  /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})/g;
const withWallTimes = (message: string) =>
  message.replace(INSTANT_IN_TEXT, (at) => instant(at, true, true));

export const errorText = (error: ApiError) => {
  const message = withWallTimes(error.message);
  return error.status === 403
    ? withUnit(t("forbidden"), message)
    : error.status === 404
    ? withUnit(t("notFound"), message)
    : error.status === 409
    ? `${labelOf(words(error.code))}${message}`
    : message;
};

// Whether the same read may be answered otherwise later: no answer, a time limit, a busy or failing
// service. A refusal of the request itself (400, 403, 404) is answered so again: no Retry.
const mayPassLater = (error: ApiError) =>
  error.status === 0 || error.status === 408 || error.status === 429 || error.status >= 500;

// An as-of instant before the history the service keeps: every section of the page is refused
// alike, and the first says so.
export const historyNotKept = (error: ApiError) => error.code === "HISTORY_NOT_KEPT";

// `saidAbove`: a failure the page already shows once for all its sections (an as-of instant
// before the history kept) is named here in a short line instead of being repeated in full.
export const Loaded = <T>(props: {
  load: Load<T>;
  retry?: () => void;
  saidAbove?: (error: ApiError) => boolean;
  children: (value: T) => ComponentChildren;
}) =>
  props.load.state === "loading"
    ? html`<p class="muted" role="status">${t("loading")}</p>`
    : props.load.state === "failed" && props.saidAbove?.(props.load.error) === true
    ? html`<p class="muted" data-testid="said-above">${t("saidAbove")}</p>`
    : props.load.state === "failed"
    ? html`<div class="alert" role="alert">
      <p>${errorText(props.load.error)}</p>
      ${
      props.retry && mayPassLater(props.load.error) &&
      html`<button type="button" onClick=${props.retry}>${t("retry")}</button>`
    }
    </div>`
    : props.children(props.load.value);

// A table that scrolls sideways on a narrow screen, with a caption for screen readers.
export const Table = (props: { caption: string; head: string[]; children: ComponentChildren }) =>
  html`
    <div class="table-wrap" tabindex="0" role="region" aria-label=${props.caption}>
      <table>
        <caption>${props.caption}</caption>
        <thead>
          <tr>${props.head.map((cell) => html`<th scope="col">${cell}</th>`)}</tr>
        </thead>
        <tbody>${props.children}</tbody>
      </table>
    </div>
  `;

// Bytes saved as a file of this name, as a download the browser makes.
export const saveFile = (blob: Blob, name: string) => {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
};

// A link to a file the service makes. Clicked, the file is read with the page's language and saved
// under the service's name for it; a refusal (the session over, the service busy) or a transfer cut
// short is said beside the link, where a plain link would leave a broken download without a word.
export const Download = (
  props: { href: string; testid?: string; children: ComponentChildren },
) => {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const save = async (event: MouseEvent) => {
    if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      const file = await fetchFile(props.href);
      saveFile(file.blob, file.name);
    } catch (failure) {
      setError(failure instanceof ApiError ? errorText(failure) : t("downloadCut"));
    } finally {
      setBusy(false);
    }
  };
  return html`
    <a href=${props.href} download data-testid=${props.testid} aria-busy=${busy
      ? "true"
      : undefined}
      onClick=${save}>${props.children}</a>${error !== null &&
        html`
          <span class="alert inline" role="alert" data-testid="download-error">${error}</span>
        `}
  `;
};
