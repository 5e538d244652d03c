// The /api-docs page: Scalar's API reference of the contract, served with its script inline so that
// it works offline. That script is 3.4 MB of JavaScript: it is loaded on the first request for the
// page (the front door keeps the page it made), not at start (where every process would hold it).
export const loadDocsPage = async (): Promise<(request: Request) => Promise<Response>> => {
  const [HttpApiScalar, HttpLayerRouter, { Api }] = await Promise.all([
    import("@effect/platform/HttpApiScalar"),
    import("@effect/platform/HttpLayerRouter"),
    import("../api/api.ts"),
  ]);
  const { handler } = HttpLayerRouter.toWebHandler(
    HttpApiScalar.layerHttpLayerRouter({
      api: Api,
      path: "/api-docs",
      scalar: { withDefaultFonts: false },
    }),
    { disableLogger: true },
  );
  return (request) => handler(request);
};
