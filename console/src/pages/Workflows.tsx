import { can, enc, get, type Me } from '../lib/api';
import { Link, navigate } from '../lib/router';
import { useLoad } from '../lib/use-load';
import { PublishForm } from '../components/Publish';
import { Empty, ErrorState, Loading } from '../components/States';

interface WorkflowSummary {
  name: string;
  revision: number;
  digest: string;
  publishedBy: string;
  publishedAt: string;
}

export function Workflows(props: { me: Me; workspaceId: string }) {
  const { workspaceId } = props;
  const [list, reload] = useLoad(() => get<{ items: WorkflowSummary[] }>(`/v1/workspaces/${enc(workspaceId)}/workflows`), [workspaceId]);
  const editor = can(props.me, workspaceId, 'editor');
  return (
    <section>
      <h2>Workflows in {workspaceId}</h2>
      {list.state === 'loading' ? <Loading what="workflows" /> : null}
      {list.state === 'error' ? <ErrorState error={list.error} retry={reload} /> : null}
      {list.state === 'ready' && list.value.items.length === 0 ? (
        <Empty title="No workflows yet">
          <p>{editor ? 'Publish one from a JSON or YAML file below.' : 'An editor of this workspace can publish one.'}</p>
        </Empty>
      ) : null}
      {list.state === 'ready' && list.value.items.length > 0 ? (
        <table className="table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Latest revision</th>
              <th>Published by</th>
              <th>Published</th>
              <th>Digest</th>
            </tr>
          </thead>
          <tbody>
            {list.value.items.map((w) => (
              <tr key={w.name}>
                <td>
                  <Link to={`/workspaces/${enc(workspaceId)}/workflows/${enc(w.name)}`}>{w.name}</Link>
                </td>
                <td>{w.revision}</td>
                <td>{w.publishedBy}</td>
                <td>{new Date(w.publishedAt).toLocaleString()}</td>
                <td>
                  <code title={w.digest}>{w.digest.slice(0, 12)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {editor ? (
        <PublishForm workspaceId={workspaceId} onPublished={(name) => navigate(`/workspaces/${enc(workspaceId)}/workflows/${enc(name)}`)} />
      ) : null}
    </section>
  );
}
