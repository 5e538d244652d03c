// The part of puppeteer-core's API the browser tests use. Its own declarations pull in a copy of
// Node's types that hides Deno's node: modules (node:assert/strict no longer type-checks).
export interface ElementHandle {
  click(): Promise<void>;
  uploadFile(...paths: string[]): Promise<void>;
}

export interface Cookie {
  readonly name: string;
  readonly value: string;
  readonly httpOnly: boolean;
}

export interface CDPSession {
  send(method: string, params?: Record<string, unknown>): Promise<unknown>;
}

export interface Request {
  url(): string;
  headers(): Record<string, string>;
  // With request interception on: answer the request in the page's stead, or let it go on.
  isInterceptResolutionHandled(): boolean;
  respond(response: {
    status: number;
    headers?: Record<string, string>;
    contentType?: string;
    body?: string;
  }): Promise<void>;
  continue(): Promise<void>;
  abort(errorCode?: string): Promise<void>;
}

export interface Page {
  setViewport(viewport: { width: number; height: number }): Promise<void>;
  goto(url: string, options?: { waitUntil?: string }): Promise<unknown>;
  reload(options?: { waitUntil?: string }): Promise<unknown>;
  goBack(options?: { waitUntil?: string }): Promise<unknown>;
  setRequestInterception(enabled: boolean): Promise<void>;
  waitForSelector(selector: string, options?: { timeout?: number }): Promise<ElementHandle | null>;
  waitForFunction(expression: string, options?: { timeout?: number }): Promise<unknown>;
  waitForNetworkIdle(options?: { idleTime?: number; timeout?: number }): Promise<void>;
  type(selector: string, text: string): Promise<void>;
  click(selector: string): Promise<void>;
  focus(selector: string): Promise<void>;
  readonly keyboard: { press(key: string): Promise<void> };
  select(selector: string, ...values: string[]): Promise<string[]>;
  $(selector: string): Promise<ElementHandle | null>;
  $$(selector: string): Promise<ElementHandle[]>;
  $eval<R>(selector: string, fn: (element: unknown) => R): Promise<Awaited<R>>;
  $$eval<R>(selector: string, fn: (elements: Array<Element>) => R): Promise<Awaited<R>>;
  evaluate<R>(fn: string | ((arg: string) => R), arg?: string): Promise<Awaited<R>>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
  cookies(): Promise<Cookie[]>;
  deleteCookie(...cookies: Cookie[]): Promise<void>;
  createCDPSession(): Promise<CDPSession>;
  browserContext(): { readonly id?: string };
  on(event: "pageerror", handler: (error: Error) => void): void;
  on(event: "request", handler: (request: Request) => void): void;
  url(): string;
  close(): Promise<void>;
  setDefaultTimeout(ms: number): void;
}

// What the tests read of a DOM element inside the page.
export interface Element {
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): Element | null;
}

export interface BrowserContext {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export interface Browser {
  newPage(): Promise<Page>;
  // A fresh profile: no cookie of another journey.
  createBrowserContext(): Promise<BrowserContext>;
  close(): Promise<void>;
}

declare const puppeteer: {
  launch(options: { executablePath: string; headless: boolean; args: string[] }): Promise<Browser>;
};
export default puppeteer;
