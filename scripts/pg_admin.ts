// What the scripts that create and drop their own databases share: one statement on a fresh
// connection to a PostgreSQL URL, and the URL of another database on the same server.
import pg from "pg";

export const adminQuery = async <R extends object = Record<string, unknown>>(
  url: string,
  text: string,
): Promise<Array<R>> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as Array<R>;
  } finally {
    await client.end();
  }
};

export const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};
