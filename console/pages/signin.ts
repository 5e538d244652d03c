/// <reference lib="dom" />
// Sign-in: the key goes once to POST /auth/session and is dropped; the cookie it buys is HttpOnly.
import { useState } from "preact/hooks";
import { ApiError, call, type SessionRequest } from "../api.ts";
import { type Key, t } from "../i18n.ts";
import { html } from "../ui.ts";

// A text of the console by key (said in the language chosen when it is shown), or another's words.
export type Notice = { readonly key: Key } | { readonly text: string };
const said = (notice: Notice) => "key" in notice ? t(notice.key) : notice.text;

export const SignIn = (props: { message: Notice | null; onSignedIn: () => void }) => {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Notice | null>(null);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const input = form.elements.namedItem("access_key") as HTMLInputElement;
    const key = input.value.trim();
    if (key === "") return;
    setBusy(true);
    setError(null);
    try {
      const body: SessionRequest = { access_key: key };
      await call("POST", "/auth/session", { body });
      input.value = "";
      props.onSignedIn();
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401
          ? { key: "badKey" }
          : { text: (failure as Error).message },
      );
    } finally {
      setBusy(false);
    }
  };

  return html`<main id="main" class="signin">
    <h1 tabindex="-1">${t("appTitle")}</h1>
    <h2>${t("signInTitle")}</h2>
    <p>${t("signInIntro")}</p>
    ${
    props.message &&
    html`<p class="notice" role="status" data-testid="signin-message">${said(props.message)}</p>`
  }
    <form onSubmit=${submit} autocomplete="off">
      <label for="access_key">${t("accessKey")}</label>
      <input
        id="access_key"
        name="access_key"
        type="password"
        required
        maxlength="200"
        autocomplete="off"
        spellcheck="false"
      />
      <button type="submit" disabled=${busy}>${busy ? t("signingIn") : t("signIn")}</button>
      ${error && html`<p class="alert" role="alert" data-testid="signin-error">${said(error)}</p>`}
    </form>
  </main>`;
};
