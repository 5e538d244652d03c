/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The browser console: sign-in, the session's header, and the page of the current path.
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import {
  ApiError,
  call,
  type Dataset,
  get,
  type Permission,
  type SessionInfo,
  whenUnauthorized,
} from "./api.ts";
import { type Lang, language, setLanguage, t } from "./i18n.ts";
import {
  Code,
  errorText,
  html,
  isDate,
  labelOf,
  Link,
  listed,
  setTimeZone,
  useLocation,
  useTitle,
} from "./ui.ts";
import { type Notice, SignIn } from "./pages/signin.ts";
import { PortfolioPage } from "./pages/portfolio.ts";
import { StoresPage } from "./pages/stores.ts";
import { StorePage } from "./pages/store.ts";
import { DayPage } from "./pages/day.ts";
import { BatchPage, ImportsPage } from "./pages/imports.ts";
import { ChangesPage } from "./pages/changes.ts";

export interface Session {
  readonly info: SessionInfo;
  readonly dataset: Dataset;
  readonly may: (permission: Permission) => boolean;
}

const sessionOf = (info: SessionInfo, dataset: Dataset): Session => {
  // Every instant of the console is shown in the dataset's time zone.
  setTimeZone(dataset.timezone);
  return {
    info,
    dataset,
    may: (permission) =>
      info.permissions.includes(permission) && info.permissions.includes("read") &&
      (permission !== "write" || info.can_write),
  };
};

const LanguageSwitch = (props: { onChange: () => void }) =>
  html`
    <label class="language">
      <span>${t("language")}</span>
      <select
        value=${language()}
        onChange=${(event: Event) => {
          setLanguage((event.target as HTMLSelectElement).value as Lang);
          props.onChange();
        }}
      >
        <option value="en">English</option>
        <option value="zh-CN">简体中文</option>
      </select>
    </label>
  `;

const Header = (props: { session: Session; onSignOut: () => void; onLanguage: () => void }) => {
  const { info, dataset } = props.session;
  const perms = info.permissions.map((p) =>
    t(p === "read" ? "permRead" : p === "write" ? "permWrite" : "permRaw")
  );
  return html`
    <header class="top">
      <div class="brand">
        <${Link} href="/console/portfolio">${t("appTitle")}<//></div>
        <nav aria-label=${t("nav")}>
          <${Link} href="/console/portfolio">${t("navPortfolio")}<//>
          <${Link} href="/console/stores">${t("navStores")}<//>
          ${props.session.may("write") &&
            html`<${Link} href="/console/imports">${t("navImports")}<//>`}
          ${props.session.may("raw") &&
            html`<${Link} href="/console/changes">${t("navChanges")}<//>`}
        </nav>
        <div class="who">
          <span data-testid="member"><span class="label">${t("you")}</span> <strong>${info.name ??
            info.member}</strong></span>
          <span data-testid="permissions">${labelOf(t("may"))}${listed(
            perms,
          )} · ${info.store_ids === null
            ? t("allStores")
            : t("someStores", { n: info.store_ids.length })}${info.permissions.includes("write") &&
              !info.can_write
            ? ` ${t("readOnlyRole")}`
            : ""}</span>
          <${LanguageSwitch} onChange=${props.onLanguage} />
          <button type="button" onClick=${props.onSignOut}>${t("signOut")}</button>
        </div>
        <p class="dataset" data-testid="dataset">
          ${labelOf(t("datasetBanner"))}<strong>${dataset.label}</strong>
          <span class="detail"> · ${t("range")} ${dataset.start} – ${dataset.end} · ${t(
            "policy",
          )} <${Code} code=${dataset.source_policy} /></span> · ${t("timezone")} ${dataset.timezone}
          <span class="detail"> · ${t("unit")} ${dataset.unit}</span>
        </p>
      </header>
  `;
};

// A path the console has no page for: said in words, with the way back to the landing page.
const NotFoundPage = () => {
  useTitle(t("pageNotFound"));
  return html`
    <h1 tabindex="-1" data-testid="not-found-title">${t("pageNotFound")}</h1>
    <p data-testid="not-found">${t("pageNotFoundIntro")}</p>
    <p>
      <${Link} href="/console/portfolio" testid="not-found-home">${t("toPortfolio")}<//></p>
  `;
};

// After a move to another path (not a change of the query alone, such as a sort or a filter),
// the new page's heading takes the focus, so keyboard and screen-reader users start on the new
// page. A page still loading draws its heading later: the focus waits for it.
const useFocusOnPathChange = (path: string) => {
  const previous = useRef(path);
  useEffect(() => {
    if (previous.current === path) return;
    previous.current = path;
    const main = document.getElementById("main");
    if (main === null) return;
    const focus = () => {
      const heading = main.querySelector("h1") as HTMLElement | null;
      if (heading === null) return false;
      heading.focus();
      return true;
    };
    if (focus()) return;
    const observer = new MutationObserver(() => focus() && observer.disconnect());
    observer.observe(main, { childList: true, subtree: true });
    return () => observer.disconnect();
  }, [path]);
};

const Page = (props: { session: Session }) => {
  const { path, query, visit } = useLocation();
  useFocusOnPathChange(path);
  const parts = path.split("/").filter((p) => p !== "");
  const id = (text: string | undefined) => text !== undefined && /^\d+$/.test(text);
  // /, /console and /console/portfolio are the portfolio, the landing page;
  // /console/stores/:id/days/:date, /console/stores/:id, /console/stores, /console/imports/:id,
  // /console/imports, /console/changes; any other path is a page that does not exist.
  if (parts.length === 0 || (parts[0] === "console" && parts.length === 1)) {
    return html`<${PortfolioPage} session=${props.session} query=${query} />`;
  }
  if (parts[0] !== "console") return html`<${NotFoundPage} />`;
  if (parts[1] === "portfolio" && parts.length === 2) {
    return html`<${PortfolioPage} session=${props.session} query=${query} />`;
  }
  if (parts[1] === "stores" && parts.length === 2) {
    return html`<${StoresPage} session=${props.session} query=${query} visit=${visit} />`;
  }
  if (parts[1] === "stores" && id(parts[2])) {
    const storeId = Number(parts[2]);
    if (parts.length === 3) {
      return html`<${StorePage} session=${props.session} storeId=${storeId} query=${query} />`;
    }
    if (parts[3] === "days" && isDate(parts[4] ?? null) && parts.length === 5) {
      return html`
        <${DayPage}
          session=${props.session}
          storeId=${storeId}
          date=${parts[4]}
          query=${query}
        />
      `;
    }
  }
  if (parts[1] === "changes" && parts.length === 2) {
    return html`<${ChangesPage} session=${props.session} />`;
  }
  if (parts[1] === "imports" && parts.length === 2) {
    return html`<${ImportsPage} session=${props.session} query=${query} />`;
  }
  if (parts[1] === "imports" && id(parts[2]) && parts.length === 3) {
    return html`<${BatchPage} session=${props.session} batchId=${
      Number(parts[2])
    } query=${query} />`;
  }
  return html`<${NotFoundPage} />`;
};

const App = () => {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  // What the sign-in page says: a text of the console (by key, shown in the language of the moment)
  // or the service's own words.
  const [message, setMessage] = useState<Notice | null>(null);
  // Why the start could not learn whether a session is open (the service busy, failing or out of
  // reach): the sign-in form would be the wrong answer to a session that may well be valid.
  const [unanswered, setUnanswered] = useState<string | null>(null);
  const [, setLang] = useState(language());
  // Whether a session is in use: a 401 then means it stopped working; before, at start-up, a 401
  // only means nobody has signed in yet.
  const signedIn = useRef(false);
  signedIn.current = session !== null && session !== undefined;

  const start = async () => {
    setUnanswered(null);
    try {
      const [info, dataset] = await Promise.all([
        get<SessionInfo>("/auth/session"),
        get<Dataset>("/api/v1/dataset"),
      ]);
      if (location.pathname === "/" || location.pathname === "/console") {
        history.replaceState(null, "", "/console/portfolio");
      }
      setSession(sessionOf(info, dataset));
    } catch (error) {
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
        setSession(null);
        if (error.status !== 401) setMessage({ text: error.message });
      } else {
        setUnanswered(
          error instanceof ApiError && error.status >= 500 ? errorText(error) : t("networkRetry"),
        );
      }
    }
  };

  useEffect(() => {
    whenUnauthorized(() => {
      if (!signedIn.current) return;
      signedIn.current = false;
      setSession(null);
      setMessage({ key: "sessionEnded" });
    });
    start();
    // A page the browser brings back from its back-forward cache (Back after a sign-out on
    // another page) shows what it held then: it asks the service again before showing anything.
    const shown = (event: PageTransitionEvent) => {
      if (!event.persisted) return;
      setSession(undefined);
      start();
    };
    addEventListener("pageshow", shown);
    return () => removeEventListener("pageshow", shown);
  }, []);

  // Signed out once the service has ended the session (or it had ended already: 401). Any other
  // failure keeps the page signed in and says so: the session may still be open.
  const [signOutError, setSignOutError] = useState<string | null>(null);
  const signOut = async () => {
    setSignOutError(null);
    try {
      await call("POST", "/auth/logout", { body: {} });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) {
        setSignOutError(
          `${t("signOutFailed")} ${
            error instanceof ApiError && error.status >= 500 ? errorText(error) : t("networkRetry")
          }`,
        );
        return;
      }
    }
    setSession(null);
    setMessage({ key: "signedOut" });
  };

  useTitle(session === null ? t("signInTitle") : null);
  // Also right after a sign-in, whose session the start could not read.
  if ((session === undefined || session === null) && unanswered !== null) {
    return html`
      <div class="alert" role="alert" data-testid="start-failed">
        <p>${unanswered}</p>
        <button type="button" onClick=${() => start()}>${t("retry")}</button>
      </div>
    `;
  }
  if (session === undefined) return html`<p class="muted" role="status">${t("loading")}</p>`;
  if (session === null) {
    return html`
      <div class="signin-page">
        <div class="signin-top">
          <${LanguageSwitch} onChange=${() => setLang(language())} />
        </div>
        <${SignIn} message=${message} onSignedIn=${() => {
          setMessage(null);
          start();
        }} />
      </div>
    `;
  }
  return html`
    <a class="skip" href="#main">${t("skip")}</a>
    <${Header}
      session=${session}
      onSignOut=${signOut}
      onLanguage=${() => setLang(language())}
    />
    ${signOutError !== null &&
      html`<p class="alert" role="alert" data-testid="sign-out-failed">${signOutError}</p>`}
    <main id="main" key=${language()}>
      <${Page} session=${session} />
    </main>
  `;
};

render(html`<${App} />`, document.getElementById("app")!);
